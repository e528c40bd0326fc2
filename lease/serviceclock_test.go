package lease_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/clock"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/mem"
	"github.com/mushroomdb/bucketlease/lease"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// serviceWorld is a mem bucket whose clock is true time, inside a
// testing/synctest bubble whose clock every machine's is built on, so that
// time moves for the service and every machine together: when every
// goroutine waits (advance, or an acquire waiting for the service's clock
// to move on before it takes an epoch from it).
type serviceWorld struct {
	b *mem.Bucket
}

// inWorld runs f in a new world whose service states its time at the
// given resolution.
func inWorld(t *testing.T, resolution time.Duration, f func(t *testing.T, w serviceWorld)) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		f(t, serviceWorld{b: &mem.Bucket{Now: time.Now, Resolution: resolution}})
	})
}

// machine returns the clock of a machine whose wall clock has been off by
// d since before its process started.
func (w serviceWorld) machine(d time.Duration) clock.Clock {
	return clock.Offset{Clock: clock.System{}, D: d}
}

// advance lets true time pass.
func (serviceWorld) advance(d time.Duration) { time.Sleep(d) }

// now is true time.
func (serviceWorld) now() time.Time { return time.Now() }

// TestContenderWithAWrongClockGetsErrClock: a holder on a right clock
// keeps db1 renewed; a contender whose wall clock has been an hour ahead
// (or behind) since it started calls Acquire. Judged on its own clock
// alone it would take over the live lease (an hour ahead, the record looks
// stale), and both MayWrite would be true. It gets ErrClock naming the
// offset, writes nothing, and the holder keeps writing.
func TestContenderWithAWrongClockGetsErrClock(t *testing.T) {
	for _, off := range []time.Duration{time.Hour, -time.Hour, 24 * time.Hour, -24 * time.Hour, ttl / 2} {
		t.Run(off.String(), func(t *testing.T) {
			inWorld(t, time.Second, func(t *testing.T, w serviceWorld) {
				holder := acquire(t, w.b, "holder", w.machine(0))
				w.advance(500 * time.Millisecond)
				_, v, _ := readRecord(t, w.b)
				_, err := lease.Acquire(context.Background(), bucket.New(w.b, "db1"), opts("contender", w.machine(off), nil))
				if !errors.Is(err, lease.ErrClock) {
					t.Fatalf("acquire with a clock %v off: %v, want ErrClock", off, err)
				}
				word := "ahead of"
				if off < 0 {
					word = "behind"
				}
				if !strings.Contains(err.Error(), word+" the service's") {
					t.Errorf("the error does not say the clock is %s the service's: %v", word, err)
				}
				if _, now, _ := readRecord(t, w.b); now != v {
					t.Errorf("the lease object changed from %s to %s: a refused contender wrote", v, now)
				}
				if !holder.MayWrite() {
					t.Error("the holder may no longer write")
				}
				if err := holder.Renew(context.Background()); err != nil {
					t.Errorf("the holder's renewal after the refusal: %v", err)
				}
			})
		})
	}
}

// TestContenderWithinAThirdOfATTLAcquires: an offset below a third of a
// TTL is absorbed, as the spec allows, and ServiceClock reports it.
func TestContenderWithinAThirdOfATTLAcquires(t *testing.T) {
	inWorld(t, time.Second, func(t *testing.T, w serviceWorld) {
		l := acquire(t, w.b, "a", w.machine(ttl/3-2*time.Second))
		sc, ok := l.ServiceClock()
		if !ok {
			t.Fatal("ServiceClock: none, on a bucket that reports the service's time")
		}
		if d := sc.Offset - (ttl/3 - 2*time.Second); d < -time.Second || d > time.Second {
			t.Errorf("offset %v (±%v), want about %v", sc.Offset, sc.Uncertainty, ttl/3-2*time.Second)
		}
	})
}

// TestHolderWithAWrongClockFromTheStartNeverHolds: a process whose clock
// has been an hour off since it started is refused at its first acquire,
// before it writes anything.
func TestHolderWithAWrongClockFromTheStartNeverHolds(t *testing.T) {
	for _, off := range []time.Duration{time.Hour, -time.Hour} {
		inWorld(t, time.Second, func(t *testing.T, w serviceWorld) {
			_, err := lease.Acquire(context.Background(), bucket.New(w.b, "db1"), opts("holder", w.machine(off), nil))
			if !errors.Is(err, lease.ErrClock) {
				t.Fatalf("acquire on a free prefix with a clock %v off: %v, want ErrClock", off, err)
			}
			if _, _, ok := readRecord(t, w.b); ok {
				t.Fatal("the refused acquire wrote the lease object")
			}
		})
	}
}

// TestHolderWhoseClockRunsAheadIsFencedAndNotTakenOverEarly: a holder
// acquires on a right clock that then runs fast, 3 s for every 10 s, never
// a step its fence would see. The renewal at which its offset from the
// service passes a third of a TTL lands, stamped 12 s ahead, and the
// service's Date shows the offset: the holder fences itself (ErrFenced and
// ErrClock). A contender on a right clock judges that record by the
// service's modification time, not by its stamp: held until a TTL (and the
// resolution and margin) after the renewal on the service's clock, then
// taken over.
func TestHolderWhoseClockRunsAheadIsFencedAndNotTakenOverEarly(t *testing.T) {
	inWorld(t, time.Second, func(t *testing.T, w serviceWorld) {
		hc := &steppedClock{}
		holder := acquire(t, w.b, "holder", hc)
		var err error
		for i := 1; i <= 4 && err == nil; i++ {
			w.advance(ttl / 3)
			hc.step(3 * time.Second)
			err = holder.Renew(context.Background())
			if i < 4 && err != nil {
				t.Fatalf("renewal %d, %v ahead: %v", i, time.Duration(i)*3*time.Second, err)
			}
		}
		if !errors.Is(err, lease.ErrFenced) || !errors.Is(err, lease.ErrClock) {
			t.Fatalf("renewal 12 s ahead: %v, want ErrFenced and ErrClock", err)
		}
		if holder.MayWrite() {
			t.Fatal("the holder may still write")
		}
		if !errors.Is(holder.Err(), lease.ErrClock) {
			t.Errorf("Err() = %v, want it to wrap ErrClock", holder.Err())
		}
		renewed := w.now()
		c, err := lease.NewContender(bucket.New(w.b, "db1"), opts("contender", w.machine(0), nil))
		if err != nil {
			t.Fatal(err)
		}
		for w.now().Sub(renewed) < ttl+time.Second {
			_, err := c.Acquire(context.Background())
			var held *lease.HeldError
			if !errors.As(err, &held) || held.State != admin.Fresh {
				t.Fatalf("acquire %v after the renewal: %v, want a fresh lease held", w.now().Sub(renewed), err)
			}
			w.advance(time.Second)
		}
		l, err := c.Acquire(context.Background())
		if err != nil {
			t.Fatalf("acquire %v after the fenced holder's last renewal: %v", w.now().Sub(renewed), err)
		}
		defer l.Release(context.Background())
	})
}

// steppedClock is the bubble's clock with its wall clock stepped ahead by
// step, while a lease runs on it.
type steppedClock struct {
	clock.System
	ahead atomic.Int64
}

func (c *steppedClock) Wall() time.Time { return c.System.Wall().Add(time.Duration(c.ahead.Load())) }

func (c *steppedClock) step(d time.Duration) { c.ahead.Add(int64(d)) }

// TestRecordStampedByAWrongClockIsJudgedByTheService: a record an hour
// old by its stamp (written by a holder whose clock was an hour behind:
// an older version, or another implementation of the spec) but written a
// moment ago on the service's clock is fresh; so is one stamped an hour
// ahead, which is not suspect (its stamp is not trusted) and is taken
// over a TTL after it was written.
func TestRecordStampedByAWrongClockIsJudgedByTheService(t *testing.T) {
	for _, off := range []time.Duration{-time.Hour, time.Hour} {
		t.Run(off.String(), func(t *testing.T) {
			inWorld(t, time.Second, func(t *testing.T, w serviceWorld) {
				start := w.now()
				stamp := start.Add(off)
				rec := admin.Record{InstanceID: "old", AcquiredAt: stamp, RenewedAt: stamp, TTLSeconds: int64(ttl / time.Second)}
				if _, err := w.b.Put(context.Background(), "db1/LEASE", rec.Encode(), driver.PutOptions{If: driver.IfAbsent()}); err != nil {
					t.Fatal(err)
				}
				st, err := admin.Inspect(context.Background(), bucket.New(w.b, "db1"), w.now())
				if err != nil {
					t.Fatal(err)
				}
				if st.State != admin.Fresh {
					t.Errorf("Inspect: %v, want fresh", st.State)
				}
				if so, ok := st.StampOffset(); !ok || so != off {
					t.Errorf("StampOffset = %v, %v; want %v", so, ok, off)
				}
				c, err := lease.NewContender(bucket.New(w.b, "db1"), opts("contender", w.machine(0), nil))
				if err != nil {
					t.Fatal(err)
				}
				var held *lease.HeldError
				if _, err := c.Acquire(context.Background()); !errors.As(err, &held) || held.State != admin.Fresh {
					t.Fatalf("acquire at once: %v, want a fresh lease held", err)
				}
				if want := start.Add(ttl + time.Second); held.TakeoverAt.Before(want) {
					t.Errorf("TakeoverAt %v, before %v", held.TakeoverAt, want)
				}
				w.advance(ttl)
				if _, err := c.Acquire(context.Background()); !errors.As(err, &held) {
					t.Fatalf("acquire a TTL later: %v, want held (the resolution is a second)", err)
				}
				w.advance(time.Second)
				l, err := c.Acquire(context.Background())
				if err != nil {
					t.Fatalf("acquire a TTL and 1 s later: %v", err)
				}
				l.Release(context.Background())
			})
		})
	}
}

// TestDeadHoldersLeaseTakenOverWithinOneAndAHalfTTL: with clocks right,
// the service's clock costs a takeover no more than its resolution: a dead holder's lease is taken within 1.5 TTL of its last
// renewal (no full wait from when the contender first saw it).
func TestDeadHoldersLeaseTakenOverWithinOneAndAHalfTTL(t *testing.T) {
	for _, ttlS := range []int64{3, 30} {
		inWorld(t, time.Second, func(t *testing.T, w serviceWorld) {
			o := opts("holder", w.machine(0), nil)
			o.TTL = time.Duration(ttlS) * time.Second
			holder, err := lease.Acquire(context.Background(), bucket.New(w.b, "db1"), o)
			if err != nil {
				t.Fatal(err)
			}
			last := w.now()
			_ = holder // dies: never renews, never releases
			o = opts("contender", w.machine(0), nil)
			o.TTL = time.Duration(ttlS) * time.Second
			c, err := lease.NewContender(bucket.New(w.b, "db1"), o)
			if err != nil {
				t.Fatal(err)
			}
			for {
				if _, err := c.Acquire(context.Background()); err == nil {
					break
				} else if !errors.Is(err, lease.ErrHeld) {
					t.Fatal(err)
				}
				if age := w.now().Sub(last); age > o.TTL*3/2 {
					t.Fatalf("TTL %ds: not taken over %v after the last renewal", ttlS, age)
				}
				w.advance(100 * time.Millisecond)
			}
			t.Logf("TTL %ds: taken over %v after the last renewal", ttlS, w.now().Sub(last))
		})
	}
}

// TestInspectReportsTheOffsets: Status.Service gives this machine's offset
// and the record's modification time on the service's clock; a bucket
// without service time leaves it nil.
func TestInspectReportsTheOffsets(t *testing.T) {
	b := mem.New() // the real clock, as show runs
	l, err := lease.Acquire(context.Background(), bucket.New(b, "db1"), opts("a", clock.System{}, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(context.Background())
	st, err := admin.Inspect(context.Background(), bucket.New(b, "db1"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if st.Service == nil {
		t.Fatal("Status.Service is nil on a bucket that reports the service's time")
	}
	if st.Service.Offset > time.Second || st.Service.Offset < -time.Second {
		t.Errorf("offset %v on one machine's clock", st.Service.Offset)
	}
	if so, ok := st.StampOffset(); !ok || so > time.Second || so < -time.Second {
		t.Errorf("StampOffset = %v, %v", so, ok)
	}
	st, err = admin.Inspect(context.Background(), bucket.New(machineClocksOnly(), "db1"), time.Now())
	if err != nil || st.Service != nil {
		t.Errorf("Inspect without service time: %+v, %v", st.Service, err)
	}
}
