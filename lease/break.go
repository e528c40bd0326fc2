package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/internal/oldlease"
)

// BreakerID is the instance id in the released record Break writes, so
// that a holder that renews afterwards finds a record that is not its own
// and stops (ErrLost).
const BreakerID = "bucketlease-break"

// Break ends the lease on prefix in b at version v, whoever holds it, so
// that another instance may take it at once. It is for an operator who has
// looked at the lease (Inspect) and decided that its holder is gone.
//
// Break never removes or overwrites any version but v, on any path to the
// service that applies If-Match consistently, including one that drops it
// (a proxy, a gateway, an old client) and so cannot be trusted with the
// lease at all:
//
//  1. it reads the lease object, and if its version is no longer v it
//     writes nothing and returns an error wrapping driver.ErrPrecondition;
//  2. it proves that this path applies If-Match without risking the lease
//     object: it writes a scratch key beside it ({prefix}/LEASE.break-probe-…),
//     writes it again with If-Match on a made-up version, which must be
//     refused, and deletes it. If that write is accepted, it returns an
//     error wrapping ErrPreconditionsIgnored and has written nothing to the
//     lease object;
//  3. only then it overwrites the lease object with If-Match: v by a
//     released record (ttl_s 0, stale to every reader).
//
// It never deletes the lease object, because many services that serve the
// S3 API ignore conditions on DELETE. What no client can guard against is a
// path that applies If-Match to one request and drops it from the next: a
// renewal that lands between steps 1 and 3 on such a path is overwritten.
func Break(ctx context.Context, b driver.Bucket, prefix string, v driver.Version, now time.Time) error {
	key := Key(prefix)
	if v == "" {
		return fmt.Errorf("break %s: no version given: break only a version you have looked at", key)
	}
	if err := checkWall(now); err != nil {
		return err
	}
	rec := Record{InstanceID: BreakerID, AcquiredAt: now, RenewedAt: now, TTLSeconds: 0}
	data := rec.Encode()
	if oldlease.BreakWithoutRead.Load() {
		return breakBlind(ctx, b, key, v, data)
	}
	_, cur, err := readLease(ctx, b, key)
	switch {
	case errors.Is(err, driver.ErrNotExist):
		return fmt.Errorf("break %s: the lease object no longer exists; nothing was written: %w", key, driver.ErrPrecondition)
	case err != nil:
		return fmt.Errorf("break %s: read the lease object: %w", key, err)
	case cur != v:
		return fmt.Errorf("break %s: the lease changed since version %s was read (it is now %s); nothing was written: %w", key, v, cur, driver.ErrPrecondition)
	}
	if err := proveIfMatch(ctx, b, key); err != nil {
		return fmt.Errorf("break %s: %w; nothing was written to the lease object", key, err)
	}
	if _, err := b.Put(ctx, key, data, driver.IfMatch(v)); err != nil {
		if errors.Is(err, driver.ErrPrecondition) {
			return fmt.Errorf("break %s: the lease changed since version %s was read; nothing was written: %w", key, v, err)
		}
		return fmt.Errorf("break %s: %w", key, err)
	}
	return nil
}

// proveIfMatch shows that the path to b applies If-Match, on a scratch key
// beside key, and waits for the scratch key's delete.
func proveIfMatch(ctx context.Context, b driver.Bucket, key string) error {
	scratch, ignored, err := proveConditions(ctx, b, key, "break", false)
	if scratch != "" {
		if derr := deleteScratch(ctx, b, scratch); err == nil && ignored == "" && derr != nil {
			return fmt.Errorf("delete the probe key %s: %w", scratch, derr)
		}
	}
	if ignored != "" {
		return fmt.Errorf("%w: the service accepted a write with %s", ErrPreconditionsIgnored, ignored)
	}
	return err
}

// breakBlind is the old Break, kept for the negative control: the real
// write and the made-up-version probe go out together, both on the lease
// object.
func breakBlind(ctx context.Context, b driver.Bucket, key string, v driver.Version, data []byte) error {
	fake := make(chan error, 1)
	go func() {
		_, err := b.Put(ctx, key, data, driver.IfMatch(driver.FakeVersion(v)))
		fake <- err
	}()
	_, err := b.Put(ctx, key, data, driver.IfMatch(v))
	ferr := <-fake
	switch {
	case ferr == nil:
		return fmt.Errorf("break %s: %w: the service accepted an overwrite with If-Match on a made-up version", key, ErrPreconditionsIgnored)
	case errors.Is(err, driver.ErrPrecondition):
		return fmt.Errorf("break %s: the lease changed since version %s was read; nothing was written: %w", key, v, err)
	case err != nil:
		return fmt.Errorf("break %s: %w", key, err)
	}
	return nil
}
