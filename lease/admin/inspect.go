package admin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/clock"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/internal/objects"
)

// Status is what Inspect found at a prefix, at one moment of the reader's
// clock.
type Status struct {
	Key   string // the lease object's key
	State State  // Free, Fresh, Stale, Released or Suspect
	// Record is nil when Free or not a lease record (Reason says why).
	Record  *Record
	Version driver.Version // empty when Free
	Reason  string         // why Suspect
	Now     time.Time      // the reading's wall-clock time
	// TakeoverAt is the earliest wall-clock time a contender could take the
	// lease over if it stays as it is: Now unless Fresh; zero when Suspect
	// (taken over after one of the contender's TTLs unchanged).
	TakeoverAt time.Time
	// Service is the service's clock at the read, by which the record was
	// judged too; nil when the driver reports no service time.
	Service *ServiceClock
}

// Holder returns the record's instance id, or "".
func (s Status) Holder() string {
	if s.Record == nil {
		return ""
	}
	return s.Record.InstanceID
}

// Inspect reads the lease object of b's prefix and classifies it at now as a
// contender would (Judge). A missing object is Free; one that is not a lease
// record is Suspect with Record nil; any other failure is an error.
func Inspect(ctx context.Context, b *bucket.Bucket, now time.Time) (Status, error) {
	return inspect(ctx, b.Driver(), b.Prefix(), now)
}

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

// StampOffset returns renewed_at minus the object's modification time: the
// stamping holder's clock offset plus the write's travel time. It is false
// without a record or service time.
func (s Status) StampOffset() (time.Duration, bool) {
	if s.Record == nil || s.Service == nil || s.Service.Modified.IsZero() {
		return 0, false
	}
	return s.Record.RenewedAt.Sub(s.Service.Modified), true
}

// Reading is a LEASE object read back: the record, or why it is not one,
// and what the answer said about the service's clock.
type Reading struct {
	Record  Record
	Err     error         // wraps ErrMalformed: the object is not a record
	Service *ServiceClock // nil when the driver reported no service time
}

// Read reads the lease object at key, timed on clk's wall clock; Service is
// set whenever the driver reported the time, driver.ErrNotExist included.
func Read(ctx context.Context, clk clock.Clock, b driver.Bucket, key string) (Reading, driver.Version, error) {
	var data []byte
	a, svc, err := TimedCall(clk, func() (a driver.Attrs, err error) {
		data, a, err = objects.ReadAll(ctx, b, key, MaxRecordSize, driver.GetOptions{})
		return a, err
	})
	v := a.Version
	if errors.Is(err, objects.ErrTooLarge) {
		return Reading{Err: fmt.Errorf("%w: the object is larger than %d bytes", ErrMalformed, MaxRecordSize), Service: svc}, v, nil
	}
	if err != nil {
		return Reading{Service: svc}, "", err
	}
	rec, derr := DecodeRecord(data)
	return Reading{Record: rec, Err: derr, Service: svc}, v, nil
}
