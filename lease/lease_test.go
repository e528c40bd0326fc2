package lease_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/clock"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/drivertest/faulty"
	"github.com/mushroomdb/bucketlease/lease"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

func TestStartTogetherExactlyOneLease(t *testing.T) {
	for round := range 20 {
		b := machineClocksOnly()
		c := clock.NewFake(t0)
		const n = 16
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			winners []string
			held    []*lease.HeldError
		)
		start := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				id := fmt.Sprintf("instance-%02d", i)
				_, err := lease.Acquire(context.Background(), bucket.New(b, "db1"), opts(id, c, nil))
				mu.Lock()
				defer mu.Unlock()
				var he *lease.HeldError
				switch {
				case err == nil:
					winners = append(winners, id)
				case errors.As(err, &he):
					held = append(held, he)
				default:
					t.Errorf("%s: %v", id, err)
				}
			}()
		}
		close(start)
		wg.Wait()
		if len(winners) != 1 {
			t.Fatalf("round %d: %d instances got the lease: %v", round, len(winners), winners)
		}
		for _, he := range held {
			if he.Holder() != winners[0] || !errors.Is(he, lease.ErrHeld) || !strings.Contains(he.Error(), winners[0]) {
				t.Fatalf("refusal names %q (%v), but %s holds the lease", he.Holder(), he, winners[0])
			}
			if !he.TakeoverAt.Equal(t0.Add(ttl)) {
				t.Fatalf("takeover at %v, want %v", he.TakeoverAt, t0.Add(ttl))
			}
		}
	}
}

func TestHolderTakenOverLearnsLost(t *testing.T) {
	b := machineClocksOnly()
	c := clock.NewFake(t0)
	var ev events
	l, err := lease.Acquire(context.Background(), bucket.New(b, "db1"), opts("holder", c, &ev))
	if err != nil {
		t.Fatal(err)
	}
	// Someone else replaces the record (a break, then a new holder).
	put(t, b, foreign("successor", c.Wall(), 30))
	if err := l.Renew(context.Background()); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("renew after a takeover: %v, want ErrLost", err)
	}
	if l.MayWrite() || !ev.has(lease.EventLost) {
		t.Fatal("a lost holder may still write, or no lost event")
	}
	if r, _, _ := readRecord(t, b); r.InstanceID != "successor" {
		t.Fatal("the renewal overwrote the successor")
	}
}

func TestFencedHolderLearnsLostAtNextRenewal(t *testing.T) {
	b := machineClocksOnly()
	holderClock, takerClock := clock.NewFake(t0), clock.NewFake(t0)
	l := acquire(t, b, "holder", holderClock)
	holderClock.Advance(ttl)
	takerClock.Advance(ttl)
	if _, err := lease.Acquire(context.Background(), bucket.New(b, "db1"), opts("taker", takerClock, nil)); err != nil {
		t.Fatal(err)
	}
	if err := l.Renew(context.Background()); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("renew: %v, want ErrLost", err)
	}
}

func TestLostReplyAcquireIsOurs(t *testing.T) {
	for _, asRefusal := range []bool{false, true} {
		t.Run(fmt.Sprintf("retry-refused=%v", asRefusal), func(t *testing.T) {
			inner := machineClocksOnly()
			dropped := 0
			b := &faulty.LostReply{Bucket: inner, AsRefusal: asRefusal, Drop: func(op, key string, cond driver.Condition) bool {
				if op == "put" && key == "db1/LEASE" && cond == driver.IfAbsent() && dropped == 0 {
					dropped++
					return true
				}
				return false
			}}
			c := clock.NewFake(t0)
			var ev events
			l, err := lease.Acquire(context.Background(), bucket.New(b, "db1"), opts("me", c, &ev))
			if err != nil {
				t.Fatalf("acquire whose reply was lost: %v", err)
			}
			if dropped != 1 {
				t.Fatal("the reply was never dropped: the test tests nothing")
			}
			r, v, _ := readRecord(t, inner)
			if r.InstanceID != "me" || l.Version() != v || !l.MayWrite() {
				t.Fatalf("lease %q at %q, stored %q at %q", "me", l.Version(), r.InstanceID, v)
			}
			if err := l.Renew(context.Background()); err != nil {
				t.Fatalf("renew after adopting: %v", err)
			}
		})
	}
}

// A lost reply of the scratch key's create, with the write landed (or the
// client's retry refused), does not fail the acquire: the key is read back.
func TestLostReplyOfTheScratchKeyIsReadBack(t *testing.T) {
	for _, asRefusal := range []bool{false, true} {
		t.Run(fmt.Sprintf("retry-refused=%v", asRefusal), func(t *testing.T) {
			inner := machineClocksOnly()
			var dropped atomic.Int32
			b := &faulty.LostReply{Bucket: inner, AsRefusal: asRefusal, Drop: func(op, key string, cond driver.Condition) bool {
				return op == "put" && admin.IsScratchKey(key) && cond == driver.IfAbsent() && dropped.CompareAndSwap(0, 1)
			}}
			l, err := lease.Acquire(context.Background(), bucket.New(b, "db1"), opts("me", clock.NewFake(t0), nil))
			if err != nil {
				t.Fatalf("acquire whose scratch key's reply was lost: %v", err)
			}
			if dropped.Load() != 1 {
				t.Fatal("the reply was never dropped: the test tests nothing")
			}
			if !l.MayWrite() {
				t.Fatal("the lease may not write")
			}
			if n := scratchLeft(t, inner); n != 0 {
				t.Errorf("%d scratch keys left behind", n)
			}
		})
	}
}

func TestLostReplyRenewalIsNotLost(t *testing.T) {
	inner := machineClocksOnly()
	drop := false
	b := &faulty.LostReply{Bucket: inner, Drop: func(op, _ string, cond driver.Condition) bool {
		_, match := cond.Match()
		return drop && op == "put" && match
	}}
	c := clock.NewFake(t0)
	l := acquire(t, b, "me", c)
	c.Advance(ttl / 3)
	drop = true
	err := l.Renew(context.Background())
	if err != nil {
		t.Fatalf("a renewal whose reply was lost: %v, want it recognised as ours", err)
	}
	drop = false
	if _, v, _ := readRecord(t, inner); l.Version() != v {
		t.Fatalf("lease version %q, stored %q", l.Version(), v)
	}
	c.Advance(ttl / 2) // past the old fence deadline, within the new one
	if !l.MayWrite() {
		t.Fatal("the recognised renewal did not move the fence")
	}
}

func TestLateRenewalOfOursIsAdoptedNotLost(t *testing.T) {
	inner := machineClocksOnly()
	late := &latePut{Bucket: inner}
	c := clock.NewFake(t0)
	l := acquire(t, late, "me", c)
	// A renewal goes out, times out on the client, and lands later.
	late.hold.Store(true)
	c.Advance(ttl / 3)
	if err := l.Renew(context.Background()); err == nil || errors.Is(err, lease.ErrLost) {
		t.Fatalf("renewal held back: %v, want a retryable error", err)
	}
	late.land(t)
	if err := l.Renew(context.Background()); err == nil || errors.Is(err, lease.ErrLost) {
		t.Fatalf("first renew after the late landing: %v, want a retryable error (adopted)", err)
	}
	if err := l.Renew(context.Background()); err != nil {
		t.Fatalf("second renew: %v", err)
	}
}

func TestMayWriteEndsAtTwoThirdsOfTTL(t *testing.T) {
	third := ttl / 3
	cases := []struct {
		name string
		step func(c *clock.Fake, d time.Duration)
	}{
		{"both clocks", (*clock.Fake).Advance},
		{"monotonic only (wall clock stuck)", (*clock.Fake).AdvanceMono},
		{"wall only (suspended machine, monotonic frozen)", (*clock.Fake).AdvanceWall},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := clock.NewFake(t0)
			l := acquire(t, machineClocksOnly(), "me", c)
			tc.step(c, 2*third-time.Nanosecond)
			if !l.MayWrite() {
				t.Fatal("fenced before two thirds of the TTL")
			}
			tc.step(c, time.Nanosecond)
			if l.MayWrite() {
				t.Fatal("may still write at two thirds of the TTL")
			}
		})
	}
	t.Run("wall clock jumps back and forth", func(t *testing.T) {
		c := clock.NewFake(t0)
		l := acquire(t, machineClocksOnly(), "me", c)
		// A step back within the skew readers absorb neither fences
		// early nor extends the fence.
		c.AdvanceWall(-third + time.Second)
		c.AdvanceMono(2*third - time.Nanosecond)
		if !l.MayWrite() {
			t.Fatal("a wall clock stepped back a little fenced early")
		}
		c.AdvanceMono(time.Nanosecond)
		if l.MayWrite() {
			t.Fatal("a wall clock stepped back extended the fence")
		}
		// A step back of an hour fences at once: the wall clock can no
		// longer see a suspension the monotonic clock did not count.
		c1 := clock.NewFake(t0)
		l1 := acquire(t, machineClocksOnly(), "me", c1)
		c1.AdvanceWall(-time.Hour)
		if l1.MayWrite() {
			t.Fatal("a wall clock stepped back an hour did not fence")
		}
		c2 := clock.NewFake(t0)
		l2 := acquire(t, machineClocksOnly(), "me", c2)
		c2.AdvanceWall(time.Hour)
		if l2.MayWrite() {
			t.Fatal("a wall clock stepped an hour forward did not fence")
		}
	})
	t.Run("renewal moves the deadline", func(t *testing.T) {
		c := clock.NewFake(t0)
		l := acquire(t, machineClocksOnly(), "me", c)
		c.Advance(third)
		if err := l.Renew(context.Background()); err != nil {
			t.Fatal(err)
		}
		c.Advance(2*third - time.Nanosecond)
		if !l.MayWrite() {
			t.Fatal("fenced before two thirds of a TTL after the renewal")
		}
		c.Advance(time.Nanosecond)
		if l.MayWrite() {
			t.Fatal("the deadline was not measured from when the renewal was sent")
		}
	})
}

// TestFenceDeadlineFromSendTime: a renewal that takes long to answer counts
// from when it was sent, not when its answer came.
func TestFenceDeadlineFromSendTime(t *testing.T) {
	c := clock.NewFake(t0)
	slow := &faulty.Failing{Bucket: machineClocksOnly()}
	l := acquire(t, slow, "me", c)
	slow.Before = func(ctx context.Context, op, _ string, cond driver.Condition) error {
		if _, ok := cond.Match(); ok && op == "put" {
			c.AdvanceWall(5 * time.Second) // the request spends 5 s on the network
			c.AdvanceMono(5 * time.Second)
		}
		return nil
	}
	if err := l.Renew(context.Background()); err != nil {
		t.Fatal(err)
	}
	slow.Before = nil
	c.Advance(2*ttl/3 - 5*time.Second)
	if l.MayWrite() {
		t.Fatal("the fence ran from when the reply arrived")
	}
}

func TestInFlightWriteCancelledAtFence(t *testing.T) {
	c := clock.NewFake(t0)
	started := make(chan struct{})
	blocking := &faulty.Failing{Bucket: machineClocksOnly()}
	l := acquire(t, blocking, "me", c)
	// inflight is the context of the write in flight, set before started
	// is closed: the fence cancels it synchronously inside Advance, so its
	// Err says at once, with no waiting, whether the fence has fired.
	var inflight context.Context
	blocking.Before = func(ctx context.Context, _, key string, _ driver.Condition) error {
		if key == "db1/LEASE" || admin.IsScratchKey(key) {
			return nil
		}
		inflight = ctx
		close(started)
		<-ctx.Done()
		return context.Cause(ctx)
	}
	w := l.Bucket().Driver()
	errc := make(chan error, 1)
	go func() {
		_, err := w.Put(context.Background(), "chunk-1", []byte("data"), driver.PutOptions{If: driver.IfAbsent()})
		errc <- err
	}()
	<-started
	c.Advance(2*ttl/3 - time.Millisecond)
	if err := inflight.Err(); err != nil {
		t.Fatalf("the in-flight write was cancelled before the fence: %v", context.Cause(inflight))
	}
	c.Advance(time.Millisecond)
	if inflight.Err() == nil {
		t.Fatal("the in-flight write's context was not cancelled at the fence deadline")
	}
	select {
	case err := <-errc:
		if !errors.Is(err, lease.ErrFenced) {
			t.Fatalf("in-flight write ended with %v, want ErrFenced", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the in-flight write was not cancelled at the fence deadline")
	}
	if _, err := w.Put(context.Background(), "chunk-2", []byte("x"), driver.PutOptions{If: driver.IfAbsent()}); !errors.Is(err, lease.ErrFenced) {
		t.Fatalf("a write started after the fence: %v, want ErrFenced", err)
	}
	if !errors.Is(l.Err(), lease.ErrFenced) {
		t.Fatalf("lease Err = %v", l.Err())
	}
}

// overlap runs a holder that stops renewing and a contender whose wall clock
// runs skew ahead, and reports the first instant both may write.
func overlap(t *testing.T, skew time.Duration) (time.Duration, bool) {
	b := machineClocksOnly()
	hc, cc := clock.NewFake(t0), clock.NewFake(t0.Add(skew))
	h := acquire(t, b, "holder", hc)
	ct, err := lease.NewContender(bucket.New(b, "db1"), opts("contender", cc, nil))
	if err != nil {
		t.Fatal(err)
	}
	step := 100 * time.Millisecond
	for elapsed := time.Duration(0); elapsed <= 2*ttl; elapsed += step {
		l, err := ct.Acquire(context.Background())
		if err == nil {
			if h.MayWrite() {
				return elapsed, true
			}
			if !l.MayWrite() {
				t.Fatal("the contender took the lease but may not write")
			}
			return elapsed, false
		}
		if !errors.Is(err, lease.ErrHeld) {
			t.Fatal(err)
		}
		hc.Advance(step)
		cc.Advance(step)
	}
	t.Fatal("the contender never took over")
	return 0, false
}

func TestSkewUpToAThirdOfTTLIsAbsorbed(t *testing.T) {
	for _, skew := range []time.Duration{0, time.Second, ttl / 3} {
		at, both := overlap(t, skew)
		if both {
			t.Errorf("skew %v: holder and contender could both write at %v", skew, at)
		}
		if want := ttl - skew; at < want {
			t.Errorf("skew %v: took over after %v, before %v", skew, at, want)
		}
	}
	// Negative control: beyond a third of a TTL the overlap is real, and
	// the check above would catch it.
	if _, both := overlap(t, ttl/3+time.Second); !both {
		t.Error("skew beyond a third of a TTL produced no overlap: the check cannot fail")
	}
}

func TestFutureStampedRecordCountsAsFresh(t *testing.T) {
	b := machineClocksOnly()
	c := clock.NewFake(t0)
	put(t, b, foreign("fast-clock", t0.Add(ttl/2), 30))
	_, err := lease.Acquire(context.Background(), bucket.New(b, "db1"), opts("me", c, nil))
	var he *lease.HeldError
	if !errors.As(err, &he) || he.State != admin.Fresh {
		t.Fatalf("acquire over a record stamped %v ahead: %v, want held and fresh", ttl/2, err)
	}
	if !he.TakeoverAt.Equal(t0.Add(ttl/2 + ttl)) {
		t.Errorf("takeover at %v", he.TakeoverAt)
	}
}

func TestSuspectRecordsTakenOverAfterOneUnchangedTTL(t *testing.T) {
	cases := map[string]string{
		"stamped beyond its TTL in the future": foreign("far-future", t0.Add(ttl+time.Minute), 30),
		"TTL over MaxSaneTTL":                  foreign("long-ttl", t0, int64(admin.MaxSaneTTL/time.Second)+1),
		"unparseable":                          "{not json",
		"empty":                                "",
		"oversized":                            strings.Repeat("x", 5<<20),
		"wrong types":                          `{"instance_id":1,"ttl_s":"x"}`,
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			b := machineClocksOnly()
			c := clock.NewFake(t0)
			put(t, b, data)
			var ev events
			ct, err := lease.NewContender(bucket.New(b, "db1"), opts("me", c, &ev))
			if err != nil {
				t.Fatal(err)
			}
			_, err = ct.Acquire(context.Background())
			var he *lease.HeldError
			if !errors.As(err, &he) || he.State != admin.Suspect {
				t.Fatalf("first acquire: %v, want held and suspect", err)
			}
			c.Advance(ttl - time.Millisecond)
			if _, err := ct.Acquire(context.Background()); !errors.Is(err, lease.ErrHeld) {
				t.Fatalf("acquire before one TTL unchanged: %v, want held", err)
			}
			c.Advance(time.Millisecond)
			l, err := ct.Acquire(context.Background())
			if err != nil {
				t.Fatalf("acquire after one TTL unchanged: %v", err)
			}
			if !l.MayWrite() || !ev.has(lease.EventTookOver) {
				t.Fatal("no takeover reported")
			}
		})
	}
	t.Run("a change restarts the watch", func(t *testing.T) {
		b := machineClocksOnly()
		c := clock.NewFake(t0)
		put(t, b, "{garbage 1")
		ct, _ := lease.NewContender(bucket.New(b, "db1"), opts("me", c, nil))
		ct.Acquire(context.Background())
		c.Advance(ttl / 2)
		put(t, b, "{garbage 2")
		ct.Acquire(context.Background())
		c.Advance(ttl / 2)
		if _, err := ct.Acquire(context.Background()); !errors.Is(err, lease.ErrHeld) {
			t.Fatalf("took over a suspect record seen for only half a TTL: %v", err)
		}
		c.Advance(ttl / 2)
		if _, err := ct.Acquire(context.Background()); err != nil {
			t.Fatalf("after a full TTL unchanged: %v", err)
		}
	})
}

func TestStaleAndReleasedAreTakenOver(t *testing.T) {
	for name, rec := range map[string]string{
		"stale":    foreign("dead", t0.Add(-ttl), 30),
		"released": foreign("gone", t0, 0),
	} {
		t.Run(name, func(t *testing.T) {
			b := machineClocksOnly()
			put(t, b, rec)
			var ev events
			if _, err := lease.Acquire(context.Background(), bucket.New(b, "db1"), opts("me", clock.NewFake(t0), &ev)); err != nil {
				t.Fatal(err)
			}
			if !ev.has(lease.EventTookOver) {
				t.Fatal("no took-over event")
			}
		})
	}
}

func TestRestartTakesOverOwnLeaseOnceStale(t *testing.T) {
	b := machineClocksOnly()
	c := clock.NewFake(t0)
	acquire(t, b, "me", c) // then the process dies
	c.Advance(time.Second)
	restarted, err := lease.NewContender(bucket.New(b, "db1"), opts("me", c, nil))
	if err != nil {
		t.Fatal(err)
	}
	_, err = restarted.Acquire(context.Background())
	var he *lease.HeldError
	if !errors.As(err, &he) || !he.SameID || !he.TakeoverAt.Equal(t0.Add(ttl)) {
		t.Fatalf("first attempt after a restart: %v, want a HeldError (SameID) until %v", err, t0.Add(ttl))
	}
	if !strings.Contains(err.Error(), "names this instance id") {
		t.Fatalf("the error does not say the record names our own id: %v", err)
	}
	c.Advance(ttl - time.Second - time.Nanosecond)
	if _, err := restarted.Acquire(context.Background()); !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("taken over before the record was stale: %v", err)
	}
	c.Advance(time.Nanosecond)
	l, err := restarted.Acquire(context.Background())
	if err != nil {
		t.Fatalf("taking over our own unchanged, stale lease: %v", err)
	}
	if r, v, _ := readRecord(t, b); v != l.Version() || r.InstanceID != "me" {
		t.Fatalf("stored %+v at %s, lease at %s", r, v, l.Version())
	}
}

func TestProbeFailsClosed(t *testing.T) {
	cases := []struct {
		name   string
		ignore faulty.Ignore
		seed   string // an existing stale record, for the takeover path
		which  string
	}{
		{"ignores If-None-Match, empty key", faulty.IgnoreIfAbsent, "", "If-None-Match"},
		{"ignores If-Match, empty key", faulty.IgnoreIfMatch, "", "If-Match"},
		{"ignores If-Match, takeover", faulty.IgnoreIfMatch, foreign("dead", t0.Add(-time.Hour), 30), "If-Match"},
		{"ignores both", faulty.IgnoreIfAbsent | faulty.IgnoreIfMatch, "", "If-"},
		{"reports refusals as success", faulty.LieOnRefusal, "", "If-"},
	}
	for _, tc := range cases {
		// A path that ignores preconditions on every key is caught on the
		// scratch key, before anything is written to the lease object.
		t.Run(tc.name+", every key", func(t *testing.T) {
			inner := machineClocksOnly()
			if tc.seed != "" {
				put(t, inner, tc.seed)
			}
			before, beforeV, _ := readRecord(t, inner)
			b := &faulty.Bucket{Bucket: inner, Ignore: tc.ignore}
			l, err := lease.Acquire(context.Background(), bucket.New(b, "db1"), opts("me", clock.NewFake(t0), nil))
			if !errors.Is(err, lease.ErrPreconditionsIgnored) {
				t.Fatalf("acquire on a service that %s: %v, %v; want ErrPreconditionsIgnored", tc.name, l, err)
			}
			if !strings.Contains(err.Error(), lease.EnvConditional+"=off") || !strings.Contains(err.Error(), tc.which) ||
				!strings.Contains(err.Error(), "nothing was written to the lease object") {
				t.Errorf("the error does not name the cause, the switch and what was written: %v", err)
			}
			after, afterV, _ := readRecord(t, inner)
			if afterV != beforeV || string(after.Encode()) != string(before.Encode()) {
				t.Errorf("the lease object changed: %+v at %q, was %+v at %q", after, afterV, before, beforeV)
			}
			if n := scratchLeft(t, inner); n != 0 {
				t.Errorf("%d scratch keys left behind", n)
			}
		})
		// A path that treats the lease object unlike its neighbours passes
		// the scratch proof; the probes of the lease object catch it, and
		// since the first write may have gone over a live holder, the
		// prefix is left blocked for a full TTL, not released: nobody else
		// gets in before such a holder fenced.
		t.Run(tc.name+", the lease object only", func(t *testing.T) {
			inner := machineClocksOnly()
			if tc.seed != "" {
				put(t, inner, tc.seed)
			}
			b := &faulty.Bucket{Bucket: inner, Ignore: tc.ignore, Only: func(key string) bool { return key == "db1/LEASE" }}
			l, err := lease.Acquire(context.Background(), bucket.New(b, "db1"), opts("me", clock.NewFake(t0), nil))
			if !errors.Is(err, lease.ErrPreconditionsIgnored) {
				t.Fatalf("acquire on a service that %s: %v, %v; want ErrPreconditionsIgnored", tc.name, l, err)
			}
			if !strings.Contains(err.Error(), lease.EnvConditional+"=off") || !strings.Contains(err.Error(), tc.which) {
				t.Errorf("the error does not name the cause and the switch: %v", err)
			}
			if !strings.Contains(err.Error(), "left blocked") {
				t.Errorf("the error does not say the prefix was left blocked: %v", err)
			}
			if r, _, ok := readRecord(t, inner); !ok || r.InstanceID != "me" || r.TTLSeconds < 30 {
				t.Errorf("the prefix was not left blocked: %+v (exists %v)", r, ok)
			}
			if _, err := lease.Acquire(context.Background(), bucket.New(inner, "db1"), opts("third", clock.NewFake(t0.Add(ttl/2)), nil)); !errors.Is(err, lease.ErrHeld) {
				t.Errorf("a third instance got in at once after the refused acquire: %v", err)
			}
		})
	}
	t.Run("negative control: an honest bucket passes", func(t *testing.T) {
		if _, err := lease.Acquire(context.Background(), bucket.New(&faulty.Bucket{Bucket: machineClocksOnly()}, "db1"), opts("me", clock.NewFake(t0), nil)); err != nil {
			t.Fatal(err)
		}
	})
}

func TestBestEffortMode(t *testing.T) {
	var logs logBuffer
	o := opts("me", clock.NewFake(t0), nil)
	o.Seams().Getenv = func(k string) string {
		if k == lease.EnvConditional {
			return "off"
		}
		return ""
	}
	o.Logger = logs.logger()
	// A service ignoring preconditions is refused conditionally…
	b := &faulty.Bucket{Bucket: machineClocksOnly(), Ignore: faulty.IgnoreIfAbsent | faulty.IgnoreIfMatch}
	l, err := lease.Acquire(context.Background(), bucket.New(b, "db1"), o)
	if err != nil {
		t.Fatalf("best-effort acquire: %v", err)
	}
	if l.Exclusion() != driver.BestEffort {
		t.Errorf("Exclusion = %v, want best-effort", l.Exclusion())
	}
	if !strings.Contains(logs.String(), "exclusion=best-effort") {
		t.Errorf("the acquired event does not log the exclusion:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "best-effort") {
		t.Errorf("no WARN about best-effort exclusion in:\n%s", logs.String())
	}
	// …and still refuses a second instance that reads the holder's record.
	o2 := *o
	o2.InstanceID = "other"
	if _, err := lease.Acquire(context.Background(), bucket.New(b, "db1"), &o2); !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("second best-effort instance: %v, want held", err)
	}
	o3 := opts("x", clock.NewFake(t0), nil)
	o3.Seams().Getenv = func(string) string { return "of" }
	if _, err := lease.Acquire(context.Background(), bucket.New(machineClocksOnly(), "db1"), o3); err == nil || !strings.Contains(err.Error(), lease.EnvConditional) {
		t.Fatalf("a misspelled switch value: %v, want an error naming the variable", err)
	}
	o4 := opts("x", clock.NewFake(t0), nil)
	l4, err := lease.Acquire(context.Background(), bucket.New(machineClocksOnly(), "db1"), o4)
	if err != nil || l4.Exclusion() != driver.Conditional {
		t.Fatalf("default mode: %v, %v", l4, err)
	}
}

func TestReleaseNeverRemovesSuccessor(t *testing.T) {
	for _, condDelete := range []bool{true, false} {
		t.Run(fmt.Sprintf("conditional-delete=%v", condDelete), func(t *testing.T) {
			var b driver.Bucket = machineClocksOnly()
			if !condDelete {
				b = faulty.NoConditionalDelete{Bucket: b}
			}
			hc, sc := clock.NewFake(t0), clock.NewFake(t0)
			h := acquire(t, b, "holder", hc)
			hc.Advance(ttl)
			sc.Advance(ttl)
			acquire(t, b, "successor", sc)
			if err := h.Release(context.Background()); err != nil {
				t.Fatal(err)
			}
			if r, _, ok := readRecord(t, b); !ok || r.InstanceID != "successor" || r.TTLSeconds == 0 {
				t.Fatalf("after the old holder's release: %+v (exists %v)", r, ok)
			}
		})
	}
}

func TestReleaseLetsTheNextInstanceIn(t *testing.T) {
	for _, condDelete := range []bool{true, false} {
		t.Run(fmt.Sprintf("conditional-delete=%v", condDelete), func(t *testing.T) {
			var b driver.Bucket = machineClocksOnly()
			if !condDelete {
				b = faulty.NoConditionalDelete{Bucket: b}
			}
			counted := &faulty.Counting{Bucket: b}
			c := clock.NewFake(t0)
			h := acquire(t, counted, "holder", c)
			_, _, acquireDeletes := counted.Counts() // the probe's scratch key
			if err := h.Release(context.Background()); err != nil {
				t.Fatal(err)
			}
			if h.MayWrite() || !errors.Is(h.Err(), lease.ErrReleased) {
				t.Fatal("a released lease may still write")
			}
			// Whatever the driver declares, release is an If-Match
			// overwrite by a released record, never a delete.
			if r, _, ok := readRecord(t, b); !ok || r.TTLSeconds != 0 || r.InstanceID != "holder" {
				t.Fatalf("release left %+v (exists %v), want a released record", r, ok)
			}
			if _, _, deletes := counted.Counts(); deletes != acquireDeletes {
				t.Fatalf("release sent %d deletes", deletes-acquireDeletes)
			}
			if _, err := lease.Acquire(context.Background(), bucket.New(b, "db1"), opts("next", c, nil)); err != nil {
				t.Fatalf("next instance right after release: %v", err)
			}
		})
	}
}

func TestKeepRenewsAndStopsCleanly(t *testing.T) {
	c := clock.NewFake(t0)
	var ev events
	l, err := lease.Acquire(context.Background(), bucket.New(machineClocksOnly(), "db1"), opts("me", c, &ev))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Keep(ctx) }()
	for i := range 5 {
		waitTimers(t, c, 2) // the fence timer and Keep's sleep
		c.Advance(ttl / 3)
		waitFor(t, func() bool { return count(&ev, lease.EventRenewed) == i+1 })
	}
	if !l.MayWrite() {
		t.Fatal("a kept lease was fenced")
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Keep returned %v", err)
	}
}

func TestKeepRetriesThenFences(t *testing.T) {
	c := clock.NewFake(t0)
	var ev events
	var failing atomicBool
	b := &faulty.Failing{Bucket: machineClocksOnly(), Before: func(ctx context.Context, op, _ string, _ driver.Condition) error {
		if failing.get() {
			return errors.New("503 SlowDown")
		}
		return nil
	}}
	o := opts("me", c, &ev)
	o.Seams().RetryInterval = time.Second
	l, err := lease.Acquire(context.Background(), bucket.New(b, "db1"), o)
	if err != nil {
		t.Fatal(err)
	}
	failing.set(true)
	done := make(chan error, 1)
	go func() { done <- l.Keep(context.Background()) }()
	for range 30 {
		var err error
		returned := false
		waitFor(t, func() bool {
			select {
			case err = <-done:
				returned = true
				return true
			default:
				return c.Timers() >= 2
			}
		})
		if !returned {
			c.Advance(time.Second)
			continue
		}
		{
			if !errors.Is(err, lease.ErrFenced) {
				t.Fatalf("Keep returned %v, want ErrFenced", err)
			}
			if n := count(&ev, lease.EventRenewalFailed); n < 5 {
				t.Fatalf("only %d failed renewals before the fence", n)
			}
			if !ev.has(lease.EventFenced) {
				t.Fatal("no fenced event")
			}
			return
		}
	}
	t.Fatal("Keep did not return at the fence")
}

type atomicBool struct {
	mu sync.Mutex
	v  bool
}

func (a *atomicBool) get() bool  { a.mu.Lock(); defer a.mu.Unlock(); return a.v }
func (a *atomicBool) set(v bool) { a.mu.Lock(); a.v = v; a.mu.Unlock() }

func count(ev *events, k lease.EventKind) int {
	n := 0
	for _, got := range ev.kinds() {
		if got == k {
			n++
		}
	}
	return n
}

// waitTimers waits until the code under test has at least n timers pending
// on c, i.e. it is asleep.
func waitTimers(t *testing.T, c *clock.Fake, n int) {
	t.Helper()
	waitFor(t, func() bool { return c.Timers() >= n })
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestBrokenLeaseWithOurIDIsLost: a released record that keeps our instance
// id (a break that preserved the id) is not a late renewal of ours.
func TestBrokenLeaseWithOurIDIsLost(t *testing.T) {
	b := machineClocksOnly()
	c := clock.NewFake(t0)
	l := acquire(t, b, "me", c)
	rec := l.Record()
	rec.TTLSeconds = 0
	if _, err := b.Put(context.Background(), "db1/LEASE", rec.Encode(), driver.PutOptions{If: driver.IfMatch(l.Version())}); err != nil {
		t.Fatal(err)
	}
	c.Advance(ttl / 3)
	if err := l.Renew(context.Background()); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("renew over a released record of our id: %v, want ErrLost", err)
	}
}

// TestWallClockBeyondTheRecordsRange: a wall clock reading year 10000 is an
// error at acquire and a failed renewal, never a panic or an empty object.
func TestWallClockBeyondTheRecordsRange(t *testing.T) {
	far := time.Date(9999, 12, 31, 23, 59, 50, 0, time.UTC)
	c := clock.NewFake(far)
	b := machineClocksOnly()
	l := acquire(t, b, "me", c)
	c.Advance(15 * time.Second) // now in the year 10000, within the fence
	if err := l.Renew(context.Background()); err == nil || errors.Is(err, lease.ErrLost) || !strings.Contains(err.Error(), "wall clock") {
		t.Fatalf("renew with the wall clock in year 10000: %v", err)
	}
	if _, err := lease.Acquire(context.Background(), bucket.New(machineClocksOnly(), "db1"), opts("other", c, nil)); err == nil || !strings.Contains(err.Error(), "wall clock") {
		t.Fatalf("acquire with the wall clock in year 10000: %v", err)
	}
	if r, _, ok := readRecord(t, b); !ok || r.InstanceID != "me" {
		t.Fatal("the stored record was damaged")
	}
}
