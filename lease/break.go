package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/clock"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// Break ends the lease on b's prefix at version v, whoever holds it, for
// an operator who has looked at the lease (Inspect) and decided that its
// holder must stop. It never lets a contender in while the broken holder
// may still be writing: the record it writes names BreakerID, so the holder
// learns that it lost the lease at its next renewal, and it stays fresh to
// every reader for at least as long as the broken record would have
// (longer where the driver reports the service's time: a reader also
// waits a TTL, plus the clock's resolution, after the service stored the
// break's record):
//
//   - over a fresh record it keeps that record's renewed_at and ttl_s. The
//     holder stops writing two thirds of its TTL after it sent its last
//     renewal (its fence), and a contender whose clock runs up to a third
//     of a TTL ahead of the holder's still sees the record fresh until
//     then; a contender whose clock lags sees it fresh for longer. Every
//     reader judges the break record as it would have judged the broken
//     one, so no contender takes over sooner than it would have without the
//     break: a TTL after the last renewal, when the record goes stale
//     (Inspect's TakeoverAt before the break);
//   - over a stale or released record it writes a released record (ttl_s
//     0): the holder's fence has passed, by the same reckoning;
//   - over a suspect record (stamped far in the future, or a TTL over
//     MaxSaneTTL) it keeps renewed_at and ttl_s too, so a contender still
//     waits one of its own TTLs after seeing it unchanged;
//   - over an object that is not a lease record (whose writer and TTL are
//     unknown) it writes a record fresh for DefaultTTL from now.
//
// With allowOverlap, Break instead writes a released record (ttl_s 0),
// which every contender may take over at once, whatever the record it
// breaks. If that record was fresh, its holder may still be writing until
// its fence (up to two thirds of its TTL after its last renewal) while the
// next holder has started: two writers at once. It is for a holder known
// to be dead (its machine is off), never for one only suspected to be.
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
//  3. only then it overwrites the lease object with If-Match: v.
//
// It never deletes the lease object, because many services that serve the
// S3 API ignore conditions on DELETE. What no client can guard against is a
// path that applies If-Match to one request and drops it from the next: a
// renewal that lands between steps 1 and 3 on such a path is overwritten.
func Break(ctx context.Context, b *bucket.Bucket, v driver.Version, now time.Time, allowOverlap bool) error {
	return breakAt(ctx, b.Driver(), b.Prefix(), v, now, allowOverlap)
}

// breakRecord is the record a break writes over cur, read at the
// breaker's wall-clock time now: see Break.
func breakRecord(cur admin.Reading, now time.Time, overlap bool) admin.Record {
	rec := admin.Record{InstanceID: admin.BreakerID, AcquiredAt: now, RenewedAt: now, TTLSeconds: 0}
	if cur.Err == nil {
		// A break is no holder: it keeps the broken record's epoch, so
		// that the next holder's follows it.
		rec.Epoch, rec.Began, rec.Before = cur.Record.Epoch, cur.Record.Began, cur.Record.Before
	}
	switch {
	case overlap:
	case cur.Err != nil: // not a record: nothing is known of its writer
		rec.TTLSeconds = int64(DefaultTTL / time.Second)
	case cur.Record.StateAt(now) == admin.Fresh || cur.Record.StateAt(now) == admin.Suspect:
		rec.RenewedAt, rec.TTLSeconds = cur.Record.RenewedAt, cur.Record.TTLSeconds
	}
	return rec
}

func breakAt(ctx context.Context, b driver.Bucket, prefix string, v driver.Version, now time.Time, overlap bool) error {
	key := admin.Key(prefix)
	if err := admin.CheckKey(key); err != nil {
		return err
	}
	if v == "" {
		return fmt.Errorf("break %s: no version given: break only a version you have looked at", key)
	}
	if err := checkWall(now); err != nil {
		return err
	}
	cur, curV, err := admin.Read(ctx, clock.System{}, b, key)
	switch {
	case errors.Is(err, driver.ErrNotExist):
		return fmt.Errorf("break %s: the lease object no longer exists; nothing was written: %w", key, driver.ErrPrecondition)
	case err != nil:
		return fmt.Errorf("break %s: read the lease object: %w", key, err)
	case curV != v:
		return fmt.Errorf("break %s: the lease changed since version %s was read (it is now %s); nothing was written: %w", key, v, curV, driver.ErrPrecondition)
	}
	data := breakRecord(cur, now, overlap).Encode()
	if err := proveIfMatch(ctx, b, key); err != nil {
		return fmt.Errorf("break %s: %w; nothing was written to the lease object", key, err)
	}
	if _, err := b.Put(ctx, key, data, driver.PutOptions{If: driver.IfMatch(v)}); err != nil {
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
	p := newPacer(clock.System{}, b.Capabilities())
	scratch, ignored, err := proveConditions(ctx, b, p, key, "break", false)
	if scratch != "" {
		if derr := deleteScratch(ctx, b, p, scratch); err == nil && ignored == "" && derr != nil {
			return fmt.Errorf("delete the probe key %s: %w", scratch, derr)
		}
	}
	if ignored != "" {
		return fmt.Errorf("%w: the service accepted a write with %s", ErrPreconditionsIgnored, ignored)
	}
	return err
}
