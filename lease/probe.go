package lease

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/internal/objects"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// proveLease sends together the probes not yet proven on the lease object
// at v (data is our record): If-None-Match: * and If-Match on a made-up
// version must be refused, If-Match on v accepted. It returns the lease's
// version, or why the lease cannot be kept. The writes are paced until the
// fence deadline, until.
func (a *attempt) proveLease(ctx context.Context, data []byte, v driver.Version, ifAbsentProven, ifMatchProven bool, until time.Duration) (driver.Version, error) {
	type probe struct {
		name string
		cond driver.Condition
		err  chan error
	}
	var probes []probe
	if !ifAbsentProven {
		probes = append(probes, probe{"If-None-Match: *", driver.IfAbsent(), make(chan error, 1)})
	}
	if !ifMatchProven {
		probes = append(probes, probe{"If-Match on a made-up version", driver.IfMatch(objects.FakeVersion(v)), make(chan error, 1)})
	}
	// If-Match on the current version must be accepted too, or no renewal
	// could succeed (Ceph RGW 16.2 refuses a quoted current ETag); a
	// takeover has shown it already.
	type putResult struct {
		v   driver.Version
		err error
	}
	var first chan putResult
	if !ifMatchProven {
		first = make(chan putResult, 1)
		go func() {
			a2, err := a.pace.put(ctx, a.b, a.c.key, data, driver.IfMatch(v), until)
			first <- putResult{a2.Version, err}
		}()
	}
	for _, p := range probes {
		go func() {
			_, err := a.pace.put(ctx, a.b, a.c.key, data, p.cond, until)
			p.err <- err
		}()
	}
	var failure error
	for _, p := range probes {
		err := <-p.err
		switch {
		case failure != nil:
		case err == nil:
			failure = ignoredError(a.c.key, p.name)
		case !errors.Is(err, driver.ErrPrecondition):
			failure = fmt.Errorf("acquire %s: probe %s: %w", a.c.key, p.name, err)
		}
	}
	if first != nil {
		r := <-first
		switch {
		case failure != nil:
		case r.err == nil:
			v = r.v
		case errors.Is(r.err, driver.ErrPrecondition):
			failure = fmt.Errorf("acquire %s: %w: the service refused a write with If-Match on the current version %s, so no renewal could ever succeed; the lease does not run where it could not be kept (%w)",
				a.c.key, ErrPreconditionsIgnored, v, r.err)
		default:
			failure = fmt.Errorf("acquire %s: If-Match on the current version: %w", a.c.key, r.err)
		}
	}
	return v, failure
}

// provePath proves once per Acquire, on a scratch key and before the first
// write to the lease object, that this path applies both preconditions.
// Reading first keeps an acquire from writing over a record it has not
// judged; this keeps its first write off one created since the read on a
// path that drops the header (a proxy, a gateway, an old client).
func (a *attempt) provePath(ctx context.Context) error {
	if a.proven {
		return nil
	}
	var ignored string
	var err error
	a.scratch, ignored, err = proveConditions(ctx, a.b, a.pace, a.c.key, "acquire", true)
	switch {
	case ignored != "":
		a.dropScratch(ctx)
		return fmt.Errorf("%w; nothing was written to the lease object", ignoredError(a.c.key, ignored))
	case err != nil:
		a.dropScratch(ctx)
		return fmt.Errorf("acquire %s: prove that the path applies preconditions: %w; nothing was written to the lease object", a.c.key, err)
	}
	a.proven = true
	return nil
}

// dropScratch starts the delete of the proof's scratch key, once the first
// write to the lease object has returned (see proveConditions).
func (a *attempt) dropScratch(ctx context.Context) {
	if a.scratch == "" {
		return
	}
	scratch := a.scratch
	a.scratch = ""
	done := make(chan error, 1)
	go func() { done <- deleteScratch(ctx, a.b, a.pace, scratch) }()
	a.deletes = append(a.deletes, done)
}

// settle waits for the scratch deletes, logging a failed one (harmless).
func (a *attempt) settle() {
	a.dropScratch(context.Background())
	for _, d := range a.deletes {
		if err := <-d; err != nil {
			a.c.s.logger.Warn("bucketlease: could not delete a probe's scratch key; it holds nothing and is safe to delete", "key", a.c.key, "err", err)
		}
	}
}

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

// proveConditions creates a new scratch key beside key with IfAbsent, then
// writes it with If-Match on a made-up version (and, if ifAbsent, IfAbsent)
// together, through p; each must be refused. It returns the scratch key to
// delete ("" if none), ignored naming an ignored precondition, or err. The
// caller deletes it after the lease object's first write: MinIO and Versity's
// posix backend remove a directory a DELETE left empty, failing a concurrent
// PUT into it.
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
