package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
)

// BreakerID is the instance id in the released record Break writes, so
// that a holder that renews afterwards finds a record that is not its own
// and stops (ErrLost).
const BreakerID = "bucketlease-break"

// Break ends the lease on prefix in b at version v, whoever holds it, so
// that another instance may take it at once. It is for an operator who has
// looked at the lease (Inspect) and decided that its holder is gone.
//
// Break never removes or overwrites any version but v: it overwrites the
// lease object with If-Match: v by a released record (ttl_s 0, stale to
// every reader) and, in the same round trip, sends the same write with
// If-Match on a made-up version, which the service must refuse. It never
// deletes, because many services that serve the S3 API ignore conditions on
// DELETE. If the lease changed since v was read, Break returns an error
// wrapping driver.ErrPrecondition and writes nothing. If the service accepts
// the made-up version it returns an error wrapping ErrPreconditionsIgnored:
// such a service cannot hold a lease in the first place (every Acquire
// fails closed on it), so there was no successor for the write to clobber.
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
