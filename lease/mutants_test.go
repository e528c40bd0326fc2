package lease_test

// Tests that kill mutants of the safety lines which the other tests let
// survive (scripts/mutate, lab/mutate/mutants.txt).

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/clock"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/lease"
)

// TestHolderReplacedByATwinLearnsInstanceInUse: a live holder whose record
// is replaced by another process configured with the same instance id
// learns so at its next renewal: ErrLost wrapping ErrInstanceInUse, which
// tells the operator to give each process its own id. A holder taken over
// by another id gets ErrLost without ErrInstanceInUse. Neither renewal
// writes over the other process's record. (Mutants lose-no-instance-in-use,
// and renew-unconditional, which the other tests catch only by a hang.)
func TestHolderReplacedByATwinLearnsInstanceInUse(t *testing.T) {
	for _, tc := range []struct {
		name, by string
		inUse    bool
	}{
		{"a twin with our id", "same", true},
		{"another instance", "other", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := machineClocksOnly()
			c := clock.NewFake(t0)
			holder := acquire(t, b, "same", c)
			c.Advance(ttl / 3)
			// The other process's record, written over ours while we are
			// live (its clock says ours was stale, or it ignored the lease).
			theirs := put(t, b, foreign(tc.by, c.Wall(), 30))
			err := holder.Renew(context.Background())
			if rec, v, _ := readRecord(t, b); v != theirs || rec.InstanceID != tc.by {
				t.Fatalf("the renewal wrote over the other process's record: now %+v at %s", rec, v)
			}
			if !errors.Is(err, lease.ErrLost) {
				t.Fatalf("renewal after the record was replaced: %v, want ErrLost", err)
			}
			if got := errors.Is(err, lease.ErrInstanceInUse); got != tc.inUse {
				t.Fatalf("renewal's error %q: errors.Is(err, ErrInstanceInUse) = %v, want %v", err, got, tc.inUse)
			}
			if got := errors.Is(holder.Err(), lease.ErrInstanceInUse); got != tc.inUse {
				t.Fatalf("Err() = %v: errors.Is(err, ErrInstanceInUse) = %v, want %v", holder.Err(), got, tc.inUse)
			}
			if holder.MayWrite() {
				t.Fatal("the replaced holder may still write")
			}
		})
	}
}

// TestStreamedUploadStopsAtTheFence: a streamed upload through
// Lease.Bucket starts no part and no commit once the holder may not write,
// even before the fence timer has noticed: here the wall clock passes the
// deadline while the upload reads its body and the monotonic clock stands
// still (a suspended machine), so only the check before each request can
// stop it. Nothing is stored. The same upload without the suspension is
// stored. (Mutant bucket-stream-parts-after-fence.)
func TestStreamedUploadStopsAtTheFence(t *testing.T) {
	for _, suspend := range []bool{false, true} {
		ctx := context.Background()
		b := machineClocksOnly()
		c := clock.NewFake(t0)
		l := acquire(t, b, "me", c)
		body := &onRead{r: bytes.NewReader(make([]byte, 1<<20))}
		if suspend {
			body.f = func() { c.AdvanceWall(ttl) }
		}
		_, err := l.Bucket().Driver().PutStream(ctx, "chunks/0001", body, driver.PutOptions{If: driver.IfAbsent()}, nil)
		_, _, gerr := b.Get(ctx, "db1/chunks/0001", driver.GetOptions{})
		switch {
		case !suspend && (err != nil || gerr != nil):
			t.Fatalf("an upload within the fence: %v; stored: %v", err, gerr)
		case suspend && !errors.Is(err, lease.ErrFenced):
			t.Fatalf("an upload whose body was read past the fence deadline: %v, want an error wrapping ErrFenced", err)
		case suspend && !errors.Is(gerr, driver.ErrNotExist):
			t.Fatalf("an upload refused at the fence was stored (%v)", gerr)
		}
		l.Release(ctx)
	}
}

// onRead is a reader that calls f (once) at its first Read.
type onRead struct {
	r io.Reader
	f func()
}

func (o *onRead) Read(p []byte) (int, error) {
	if o.f != nil {
		o.f()
		o.f = nil
	}
	return o.r.Read(p)
}

// TestTwinsStartingTogetherOnAStuckClock: two processes configured with one
// instance id start together on one stuck clock (both stamp the same
// renewed_at). The second reads the key free, the first's acquire lands,
// then the second's If-None-Match: * is refused and it reads the first's
// record back. Only acquired_at's random fraction tells that record from
// the one the second sent, so the second must not take it for its own
// write: it is refused (ErrHeld), and the first still holds the lease.
// (Mutant acquired-at-not-random.)
func TestTwinsStartingTogetherOnAStuckClock(t *testing.T) {
	ctx := context.Background()
	raw := machineClocksOnly()
	c := clock.NewFake(t0) // never advanced: a stuck clock
	var first *lease.Lease
	b := &beforeFirstPut{Bucket: raw, f: func() { first = acquire(t, raw, "same", c) }}
	second, err := lease.Acquire(ctx, bucket.New(b, "db1"), opts("same", c, nil))
	if first == nil {
		t.Fatal("the second process never wrote")
	}
	if err == nil {
		t.Fatalf("the second process took the first one's fresh lease for its own write (first may write: %v, second: %v)", first.MayWrite(), second.MayWrite())
	}
	if !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("the second process: %v, want ErrHeld", err)
	}
	if !first.MayWrite() {
		t.Fatalf("the first process lost its lease: %v", first.Err())
	}
}

// beforeFirstPut calls f once, just before its first Put is sent.
type beforeFirstPut struct {
	driver.Bucket
	f func()
}

func (b *beforeFirstPut) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	if b.f != nil {
		f := b.f
		b.f = nil
		f()
	}
	return b.Bucket.Put(ctx, key, data, opts)
}

// TestHolderWithAStuckWallClockFencesItself: a holder whose wall clock
// stands still while its monotonic clock runs must not renew on, stamping
// renewed_at from the stuck clock: readers would see the lease age while it
// is renewed, take it over after a TTL, and the holder would write on. Half
// a TTL of monotonic time with the wall clock stuck is more than the third
// of a TTL the spec absorbs, so the next renewal fences the holder. (Mutant
// fence-clock-jump-ignored: the wall clock here never steps back, so only
// the comparison of the two clocks since the last renewal sees it.)
func TestHolderWithAStuckWallClockFencesItself(t *testing.T) {
	ctx := context.Background()
	b := machineClocksOnly()
	c := clock.NewFake(t0)
	l := acquire(t, b, "me", c)
	var err error
	for i := 0; i < 4 && l.MayWrite(); i++ { // two TTLs of monotonic time
		c.AdvanceMono(ttl / 2)
		err = l.Renew(ctx)
	}
	if l.MayWrite() {
		rec, _, _ := readRecord(t, b)
		t.Fatalf("after two TTLs on the monotonic clock with the wall clock stuck, the holder still renews and may write; the record it stamps says renewed %v, which readers take for a lease that has aged", rec.RenewedAt)
	}
	if !errors.Is(err, lease.ErrFenced) {
		t.Fatalf("the renewal with the wall clock stuck: %v, want ErrFenced", err)
	}
}
