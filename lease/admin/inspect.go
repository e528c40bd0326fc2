package admin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/clock"
	"github.com/mushroomdb/bucketlease/driver"
)

// Status is what Inspect found at a prefix: the lease object, what a reader
// makes of it at one moment of its own clock, and when it could be taken
// over. It reads; it never writes.
type Status struct {
	// Key is the lease object's key.
	Key string
	// State is Free, Fresh, Stale, Released or Suspect.
	State State
	// Record is the object's record; nil when the prefix is Free or the
	// object is not a lease record (Reason says why).
	Record *Record
	// Version is the object's version; empty when Free.
	Version driver.Version
	// Reason explains a Suspect state.
	Reason string
	// Now is the reading's wall-clock time.
	Now time.Time
	// TakeoverAt is the earliest wall-clock time at which a contender could
	// take the lease over if it stays as it is: RenewedAt plus the TTL for
	// a Fresh lease, Now for a Free, Stale or Released one. It is the zero
	// time for a Suspect one, which a contender takes over only after it has
	// seen it unchanged for one of its own TTLs.
	TakeoverAt time.Time
	// Service is what the service's answer said about its clock (this
	// machine's offset from it, the object's modification time), by which
	// the record was judged too; nil when the driver reports no service
	// time, and the record was judged on the reader's clock alone.
	Service *ServiceClock
}

// Holder returns the instance id the record names, or "" when there is no
// readable record.
func (s Status) Holder() string {
	if s.Record == nil {
		return ""
	}
	return s.Record.InstanceID
}

// Inspect reads the lease object of b's prefix and classifies it at the
// wall-clock time now, as a contender would: on both clocks where the
// driver reports the service's time (Status.Service, whose offset is this
// machine's, measured on time.Now around the read), on now alone where it
// does not. A missing object is Free; an object that is not a lease record
// (empty, malformed or larger than MaxRecordSize) is Suspect with Record
// nil. Any other read failure is an error naming the key.
func Inspect(ctx context.Context, b *bucket.Bucket, now time.Time) (Status, error) {
	return inspect(ctx, b.Driver(), b.Prefix(), now)
}

// inspect is Inspect on prefix in b.
func inspect(ctx context.Context, b driver.Bucket, prefix string, now time.Time) (Status, error) {
	key := Key(prefix)
	if err := CheckKey(key); err != nil {
		return Status{}, err
	}
	st := Status{Key: key, Now: now}
	cur, v, err := Read(ctx, clock.System{}, b, key)
	st.Service = cur.Service
	switch {
	case errors.Is(err, driver.ErrNotExist):
		st.State, st.TakeoverAt = Free, now
		return st, nil
	case err != nil:
		return Status{}, fmt.Errorf("inspect %s: %w", key, err)
	}
	st.Version = v
	if cur.Err != nil {
		st.State, st.Reason = Suspect, cur.Err.Error()
		return st, nil
	}
	rec := cur.Record
	st.Record = &rec
	st.State, st.TakeoverAt = Judge(rec, now, cur.Service)
	if st.State == Suspect {
		st.Reason = rec.Suspicion(now)
	}
	return st, nil
}

// StampOffset returns the record's renewed_at minus the service's
// modification time of the lease object: how far the clock of the holder
// that stamped it was from the service's, plus the time its write took to
// arrive. It is false when there is no record or no service time.
func (s Status) StampOffset() (time.Duration, bool) {
	if s.Record == nil || s.Service == nil || s.Service.Modified.IsZero() {
		return 0, false
	}
	return s.Record.RenewedAt.Sub(s.Service.Modified), true
}
