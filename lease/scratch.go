package lease

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/internal/objects"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// The lease proves a path to the service on scratch keys beside the lease
// object before it trusts the path with a write that matters. A scratch key
// is named {prefix}/LEASE.<kind>-probe-<16 hex digits> and is deleted as
// soon as its probe is over; one is left behind only when the process dies
// (or loses the service) in the middle of a probe. IsScratchKey recognises
// them, so that a retention pass can delete leftovers; Lease.Bucket's List
// leaves them out.

// scratchKey returns a fresh random key beside key for a probe of kind,
// such as "LEASE.break-probe-1f2e…".
func scratchKey(key, kind string) (string, error) {
	var r [8]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", err
	}
	return key + "." + kind + "-probe-" + hex.EncodeToString(r[:]), nil
}

// proveConditions shows that the path to b applies preconditions, on a
// fresh scratch key beside key: it creates the key (If-None-Match: *, on a
// key that cannot exist), then writes it with If-Match on a made-up version
// and, if ifAbsent, with If-None-Match: *, together; each must be refused.
// Its writes go through p (spaced, and sent again when rate-limited; a
// nil p sends each once), so that a rate-limited probe is never taken for
// a refused one. It returns the scratch key, which the caller deletes (deleteScratch),
// or "" if there is nothing to delete. If the path accepted a write it
// should have refused, ignored names the precondition and the scratch key;
// err is any other failure.
//
// The caller deletes the scratch key, rather than this function in the
// background, because of when: MinIO and Versity's posix backend remove a
// directory left empty by a DELETE, and a PUT into that directory at the
// same moment fails (403 AccessDenied, "Existing Object is a directory"),
// so the delete must not race the acquire's first write of the lease object
// on a fresh prefix.
func proveConditions(ctx context.Context, b driver.Bucket, p *pacer, key, kind string, ifAbsent bool) (scratch, ignored string, err error) {
	scratch, err = scratchKey(key, kind)
	if err != nil {
		return "", "", err
	}
	note := []byte("bucketlease " + kind + ": a probe of the path's preconditions; safe to delete")
	sa, err := p.put(ctx, b, scratch, note, driver.IfAbsent(), 0)
	sv := sa.Version
	if err != nil {
		// The reply may have been lost, or the client's retry refused,
		// with the write landed: the key is random, so if it exists, it
		// is this write.
		if _, ra, rerr := objects.ReadAll(ctx, b, scratch, int64(len(note))+1, driver.GetOptions{}); rerr == nil {
			sv, err = ra.Version, nil
		}
	}
	if err != nil {
		// The write may have landed all the same: the caller deletes it.
		return scratch, "", fmt.Errorf("write the probe key %s: %w", scratch, err)
	}
	type probe struct {
		name string
		cond driver.Condition
	}
	probes := []probe{{"If-Match on a made-up version", driver.IfMatch(objects.FakeVersion(sv))}}
	if ifAbsent {
		probes = append(probes, probe{"If-None-Match: * over an existing object", driver.IfAbsent()})
	}
	pace := p
	errs := make([]chan error, len(probes))
	for i, p := range probes {
		errs[i] = make(chan error, 1)
		go func() {
			_, err := pace.put(ctx, b, scratch, []byte("bucketlease "+kind+": this write must have been refused"), p.cond, 0)
			errs[i] <- err
		}()
	}
	for i, p := range probes {
		perr := <-errs[i]
		switch {
		case ignored != "" || err != nil:
		case perr == nil:
			ignored = fmt.Sprintf("%s (on the probe key %s)", p.name, scratch)
		case !errors.Is(perr, driver.ErrPrecondition):
			err = fmt.Errorf("probe %s on %s: %w", p.name, scratch, perr)
		}
	}
	return scratch, ignored, err
}

// deleteScratch deletes a scratch key, on its own context bounded by
// cleanupTimeout, so that a cancelled caller still leaves nothing behind.
func deleteScratch(ctx context.Context, b driver.Bucket, p *pacer, scratch string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	return p.del(ctx, b, scratch, driver.Condition{}, 0)
}

// ownScratch reports whether key is a scratch key of this lease: named as
// one (IsScratchKey) and directly beside the lease object, not a key of the
// caller's deeper under the prefix that is named like one.
func (l *Lease) ownScratch(key string) bool {
	return strings.HasPrefix(key, l.key+".") && admin.IsScratchKey(key)
}
