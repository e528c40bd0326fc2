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

// Break ends the lease on b's prefix at version v, whoever holds it. Its
// record names admin.BreakerID, so the holder learns at its next renewal
// that it lost the lease; over a fresh or suspect record it keeps renewed_at
// and ttl_s, so nobody takes over before the broken holder's fence, by any
// allowed skew; over a stale or released one it writes a released record,
// over a non-record one fresh for DefaultTTL. allowOverlap releases at once,
// risking two writers: only for a holder known to be dead.
//
// It writes nothing unless the object is still at v (driver.ErrPrecondition)
// and If-Match proves applied on a scratch key (ErrPreconditionsIgnored),
// then writes with If-Match: v; it never deletes (many S3 services ignore
// conditions on DELETE). See docs/promises.md for what no client can guard.
func Break(ctx context.Context, b *bucket.Bucket, v driver.Version, now time.Time, allowOverlap bool) error {
	return breakAt(ctx, b.Driver(), b.Prefix(), v, now, allowOverlap)
}

// breakRecord is the record a break writes over cur at now: see Break.
func breakRecord(cur admin.Reading, now time.Time, overlap bool) admin.Record {
	rec := admin.Record{InstanceID: admin.BreakerID, AcquiredAt: now, RenewedAt: now, TTLSeconds: 0}
	if cur.Err == nil {
		// A break is no holder: it keeps the broken record's epoch.
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

// proveIfMatch proves If-Match on a scratch key beside key.
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
