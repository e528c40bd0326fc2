package lease_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/clock"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/mem"
	"github.com/mushroomdb/bucketlease/lease"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// cancelAfterLeaseWrite is a bucket that cancels the acquire's context the
// moment a write of the lease object has landed: a Ctrl-C between the
// acquire's first write and its end.
type cancelAfterLeaseWrite struct {
	*mem.Bucket
	cancel context.CancelFunc
	cond   func(driver.Condition) bool
}

// Get and Put honour their context, as every driver that sends requests
// does (mem alone does not).
func (b cancelAfterLeaseWrite) Get(ctx context.Context, key string, opts driver.GetOptions) (io.ReadCloser, driver.Attrs, error) {
	if err := ctx.Err(); err != nil {
		return nil, driver.Attrs{}, err
	}
	return b.Bucket.Get(ctx, key, opts)
}

func (b cancelAfterLeaseWrite) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	if err := ctx.Err(); err != nil {
		return driver.Attrs{}, err
	}
	v, err := b.Bucket.Put(ctx, key, data, opts)
	if err == nil && key == "db1/LEASE" && b.cond(opts.If) {
		b.cancel()
		// Let the cancellation reach whatever watches the context before
		// the acquire's next request, as it would over a network.
		time.Sleep(50 * time.Millisecond)
	}
	return v, err
}

// TestInterruptedAcquireLeavesNoLease: an acquire whose context ends after
// its write of the lease object landed (a create, and a takeover of a
// released record) returns an error that says so, and leaves the lease
// object released, never a fresh record that nobody renews or releases.
func TestInterruptedAcquireLeavesNoLease(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before string // the lease object before the acquire, or "" for none
		cond   func(driver.Condition) bool
	}{
		{"create", "", func(c driver.Condition) bool { return c == driver.IfAbsent() }},
		{"takeover", foreign("old", time.Now().Add(-time.Minute), 0), func(c driver.Condition) bool { _, ok := c.Match(); return ok }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &mem.Bucket{}
			if tc.before != "" {
				put(t, b, tc.before)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ev := &events{}
			_, err := lease.Acquire(ctx, bucket.New(cancelAfterLeaseWrite{b, cancel, tc.cond}, "db1"), opts("a", clock.System{}, ev))
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("acquire: %v, want context.Canceled", err)
			}
			rec, _, ok := readRecord(t, b)
			if ok && rec.InstanceID == "a" && rec.TTLSeconds != 0 {
				t.Fatalf("the interrupted acquire left a fresh record of its own: %+v (acquire said %v)", rec, err)
			}
			if !contains(err.Error(), "is now released") && !contains(err.Error(), "is now marked released") && !contains(err.Error(), "no lease of") {
				t.Errorf("the error does not say what was left: %v", err)
			}
			st, ierr := admin.Inspect(context.Background(), bucket.New(b, "db1"), time.Now())
			if ierr != nil || (st.State != admin.Free && st.State != admin.Released) {
				t.Errorf("after the interrupted acquire the lease is %v (%v), want free or released", st.State, ierr)
			}
			if _, err := lease.Acquire(context.Background(), bucket.New(b, "db1"), opts("b", clock.System{}, nil)); err != nil {
				t.Errorf("another instance could not take the lease at once: %v", err)
			}
		})
	}
}

// landsAfterCancel is a bucket whose Put of db1/LATEST waits until its
// context ends and then lands anyway: a request already on the wire when
// the fence cut it.
type landsAfterCancel struct{ *mem.Bucket }

func (b landsAfterCancel) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	if key != "db1/LATEST" {
		return b.Bucket.Put(ctx, key, data, opts)
	}
	select {
	case <-ctx.Done():
	case <-time.After(time.Minute):
		return driver.Attrs{}, errors.New("the fence never cancelled the write")
	}
	if _, err := b.Bucket.Put(context.Background(), key, data, opts); err != nil {
		return driver.Attrs{}, err
	}
	return driver.Attrs{}, &driver.OpError{Driver: "test", Op: "put", Key: key, Err: ctx.Err()}
}

// TestFencedWriteInFlightIsOutcomeUnknown: a write through Lease.Bucket
// that the fence cancels in flight may have landed, so its error wraps
// driver.ErrOutcomeUnknown and the fence's cause, and never matches
// context.Canceled, which a caller would read as "not written".
func TestFencedWriteInFlightIsOutcomeUnknown(t *testing.T) {
	b := landsAfterCancel{machineClocksOnly()}
	o := opts("a", clock.System{}, nil)
	o.TTL = 3 * time.Second
	l, err := lease.Acquire(context.Background(), bucket.New(b, "db1"), o)
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.Bucket().Driver().Put(context.Background(), "LATEST", []byte("pointer"), driver.PutOptions{})
	if !errors.Is(err, driver.ErrOutcomeUnknown) || !errors.Is(err, lease.ErrFenced) || errors.Is(err, context.Canceled) {
		t.Fatalf("a write the fence cancelled in flight returned %v; want ErrOutcomeUnknown and ErrFenced, not context.Canceled", err)
	}
	if _, _, err := b.Get(context.Background(), "db1/LATEST", driver.GetOptions{}); err != nil {
		t.Fatalf("the write landed, yet: %v", err)
	}
}
