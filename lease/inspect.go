package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

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
}

// Holder returns the instance id the record names, or "" when there is no
// readable record.
func (s Status) Holder() string {
	if s.Record == nil {
		return ""
	}
	return s.Record.InstanceID
}

// Inspect reads the lease object of prefix in b and classifies it at the
// wall-clock time now, as a contender would. A missing object is Free; an
// object that is not a lease record (empty, malformed or larger than
// MaxRecordSize) is Suspect with Record nil. Any other read failure is an
// error naming the key.
func Inspect(ctx context.Context, b driver.Bucket, prefix string, now time.Time) (Status, error) {
	key := Key(prefix)
	st := Status{Key: key, Now: now}
	cur, v, err := readLease(ctx, b, key)
	switch {
	case errors.Is(err, driver.ErrNotExist):
		st.State, st.TakeoverAt = Free, now
		return st, nil
	case err != nil:
		return Status{}, fmt.Errorf("inspect %s: %w", key, err)
	}
	st.Version = v
	if cur.err != nil {
		st.State, st.Reason = Suspect, cur.err.Error()
		return st, nil
	}
	rec := cur.rec
	st.Record = &rec
	st.State = rec.StateAt(now)
	switch st.State {
	case Fresh:
		st.TakeoverAt = rec.RenewedAt.Add(rec.TTL())
	case Stale, Released:
		st.TakeoverAt = now
	case Suspect:
		st.Reason = rec.suspicion(now)
	}
	return st, nil
}
