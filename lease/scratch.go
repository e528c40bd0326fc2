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

// The lease proves a path on a scratch key, {prefix}/LEASE.<kind>-probe-<16
// hex digits>, before trusting it with a write that matters, and deletes it
// after; only a process dying mid-probe leaves one (admin.IsScratchKey
// finds it; Lease.Bucket's List hides it).

// scratchKey returns a fresh random key beside key for a probe of kind.
func scratchKey(key, kind string) (string, error) {
	var r [8]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", err
	}
	return key + "." + kind + "-probe-" + hex.EncodeToString(r[:]), nil
}

// proveConditions proves that the path to b applies preconditions on a new
// scratch key beside key: it creates the key with IfAbsent, then writes it
// with If-Match on a made-up version (and, if ifAbsent, IfAbsent) together;
// each must be refused. Writes go through p, so a rate-limited probe is
// never taken for a refused one. It returns the scratch key to delete ("" if
// none), ignored naming a precondition the path ignored, or err.
//
// The caller deletes the key, not a goroutine here: MinIO and Versity's
// posix backend remove a directory a DELETE left empty, and a concurrent PUT
// into it fails, so the delete must not race the lease object's first write.
func proveConditions(ctx context.Context, b driver.Bucket, p *pacer, key, kind string, ifAbsent bool) (scratch, ignored string, err error) {
	scratch, err = scratchKey(key, kind)
	if err != nil {
		return "", "", err
	}
	note := []byte("bucketlease " + kind + ": a probe of the path's preconditions; safe to delete")
	sa, err := p.put(ctx, b, scratch, note, driver.IfAbsent(), 0)
	sv := sa.Version
	if err != nil {
		// The key is random: if it exists, this write landed.
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

// deleteScratch deletes a scratch key within cleanupTimeout, even once ctx
// is cancelled.
func deleteScratch(ctx context.Context, b driver.Bucket, p *pacer, scratch string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	return p.del(ctx, b, scratch, driver.Condition{}, 0)
}

// ownScratch reports whether key is a scratch key directly beside the lease
// object (not a look-alike deeper under the prefix).
func (l *Lease) ownScratch(key string) bool {
	return strings.HasPrefix(key, l.key+".") && admin.IsScratchKey(key)
}
