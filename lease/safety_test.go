package lease_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/clock"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/besteffort"
	"github.com/mushroomdb/bucketlease/drivertest/faulty"
	"github.com/mushroomdb/bucketlease/lease"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// The regression tests of the lease's fixed safety defects (a fenced
// holder's release removing its successor's lease, an old *Lease released
// after its Contender acquired again, twins with one instance id): each
// defect has a scenario that returns what went wrong, run against the lease
// as it is, where it must find nothing. That each check can fail is shown
// by the mutation test: a mutant in lab/mutate/mutants.txt brings the old
// defect back into a scratch copy of the lease, and names the test that
// must then fail (docs/testing.md).

// check runs scenario, which returns what went wrong or "", against the
// lease as it is, where it must find nothing.
func check(t *testing.T, scenario func(*testing.T) string) {
	t.Helper()
	if bad := scenario(t); bad != "" {
		t.Fatal(bad)
	}
}

// ignoresDeleteCondition is a service that declares a conditional delete
// but deletes whatever is there, as MinIO, gofakes3 and fake-gcs-server do.
type ignoresDeleteCondition struct{ driver.Bucket }

func (b ignoresDeleteCondition) Capabilities() driver.Capabilities {
	return driver.Capabilities{Exclusion: driver.Conditional, ConditionalDelete: true}
}

func (b ignoresDeleteCondition) Delete(ctx context.Context, key string, _ driver.Condition) error {
	return b.Bucket.Delete(ctx, key, driver.Condition{})
}

// latePut holds back Puts while hold is set: each fails on the client, and
// land applies them later, as a request delayed in the network does.
type latePut struct {
	driver.Bucket
	hold atomic.Bool
	mu   sync.Mutex
	held []func() error
}

func (l *latePut) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	if l.hold.Load() {
		l.mu.Lock()
		l.held = append(l.held, func() error { _, err := l.Bucket.Put(context.Background(), key, data, opts); return err })
		l.mu.Unlock()
		return driver.Attrs{}, errors.New("latePut: timed out on the client; the request is still in the network")
	}
	return l.Bucket.Put(ctx, key, data, opts)
}

// land stops holding and applies the held Puts in order.
func (l *latePut) land(t *testing.T) {
	t.Helper()
	l.hold.Store(false)
	l.mu.Lock()
	held := l.held
	l.held = nil
	l.mu.Unlock()
	for _, f := range held {
		if err := f(); err != nil {
			t.Fatalf("late put: %v", err)
		}
	}
}

// fencedThenTakenOver is the scenario of a fenced holder's release that
// removed its successor's lease: holder A stops renewing,
// B takes over after a TTL, A releases, and C tries to acquire. It returns
// what is wrong afterwards, or "".
func fencedThenTakenOver(t *testing.T, b driver.Bucket) string {
	t.Helper()
	ac, bc, cc := clock.NewFake(t0), clock.NewFake(t0), clock.NewFake(t0)
	a := acquire(t, b, "A", ac)
	for _, c := range []*clock.Fake{ac, bc, cc} {
		c.Advance(ttl)
	}
	succ := acquire(t, b, "B", bc)
	if err := a.Release(context.Background()); err != nil {
		return "the fenced holder's release failed: " + err.Error()
	}
	if r, v, ok := readRecord(t, b); !ok || r.InstanceID != "B" || v != succ.Version() {
		return "the fenced holder's release changed the successor's lease"
	}
	if _, err := lease.Acquire(context.Background(), bucket.New(b, "db1"), opts("C", cc, nil)); !errors.Is(err, lease.ErrHeld) {
		return "a third instance acquired while the successor holds the lease: " + errString(err)
	}
	return ""
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func TestFencedHolderReleaseKeepsSuccessorWhereDeleteConditionIsIgnored(t *testing.T) {
	ignoring := func(t *testing.T) string { return fencedThenTakenOver(t, ignoresDeleteCondition{machineClocksOnly()}) }
	check(t, ignoring)
}

// releaseOldAfterReacquire is the release of a stale *Lease: a lease is
// fenced, its Contender
// acquires again, and the old *Lease is released.
func releaseOldAfterReacquire(t *testing.T) string {
	t.Helper()
	b := machineClocksOnly()
	c := clock.NewFake(t0)
	con, err := lease.NewContender(bucket.New(b, "db1"), opts("me", c, nil))
	if err != nil {
		t.Fatal(err)
	}
	old, err := con.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c.Advance(ttl * 2 / 3) // no renewal: fenced
	if !errors.Is(old.Err(), lease.ErrFenced) {
		t.Fatalf("not fenced: %v", old.Err())
	}
	cur, err := con.Acquire(context.Background()) // as ErrFenced's doc says
	if err != nil {
		t.Fatalf("acquiring again with the same Contender: %v", err)
	}
	if err := old.Release(context.Background()); err != nil {
		return "releasing the old lease failed: " + err.Error()
	}
	if r, v, ok := readRecord(t, b); !ok || v != cur.Version() || r.TTLSeconds == 0 {
		return "releasing the old, fenced lease changed the re-acquired one"
	}
	if _, err := lease.Acquire(context.Background(), bucket.New(b, "db1"), opts("other", c, nil)); err == nil {
		return "another instance acquired while the re-acquired lease may write"
	}
	if !cur.MayWrite() {
		return "the re-acquired lease stopped writing"
	}
	return ""
}

func TestReleasingAnOldFencedLeaseKeepsTheReacquiredOne(t *testing.T) {
	check(t, releaseOldAfterReacquire)
}

// twins is the scenario of two live processes configured with one instance id,
// each following Keep's schedule (renew every TTL/3; the one without the
// lease tries to acquire every second) for three simulated minutes. It
// returns what went wrong, and the errors the second process saw.
func twins(t *testing.T) (bad string, errs []error) {
	t.Helper()
	b := machineClocksOnly()
	c := clock.NewFake(t0)
	type proc struct {
		con     *lease.Contender
		l       *lease.Lease
		renewAt time.Duration
	}
	var ps [2]*proc
	for i := range ps {
		con, err := lease.NewContender(bucket.New(b, "db1"), opts("same-hostname", c, nil))
		if err != nil {
			t.Fatal(err)
		}
		ps[i] = &proc{con: con}
	}
	ctx := context.Background()
	for step := range 180 {
		for i, p := range ps {
			switch {
			case p.l != nil && p.l.Err() != nil:
				errs = append(errs, p.l.Err())
				p.l = nil
			case p.l != nil && c.Mono() >= p.renewAt:
				if err := p.l.Renew(ctx); err == nil {
					p.renewAt = c.Mono() + ttl/3
				} else if i == 1 {
					errs = append(errs, err)
				}
			case p.l == nil && (i == 0 || step > 0):
				l, err := p.con.Acquire(ctx)
				if err != nil {
					if i == 1 {
						errs = append(errs, err)
					}
					continue
				}
				p.l, p.renewAt = l, c.Mono()+ttl/3
			}
		}
		if ps[0].l != nil && ps[1].l != nil && ps[0].l.MayWrite() && ps[1].l.MayWrite() {
			return "both processes with one instance id may write at once", errs
		}
		c.Advance(time.Second)
	}
	return "", errs
}

func TestTwoLiveProcessesWithOneIDNeverBothWrite(t *testing.T) {
	bad, errs := twins(t)
	if bad != "" {
		t.Fatal(bad)
	}
	inUse := false
	for _, err := range errs {
		if errors.Is(err, lease.ErrInstanceInUse) {
			inUse = true
			if !strings.Contains(err.Error(), "another live process") || !strings.Contains(err.Error(), "own instance id") {
				t.Errorf("ErrInstanceInUse does not say what to do: %v", err)
			}
		}
	}
	if !inUse {
		t.Fatalf("the second process never learned that another live process uses its id; it saw: %v", errs)
	}
}

func TestTwinTakesOverAStalledFirstWhichThenLoses(t *testing.T) {
	b := machineClocksOnly()
	c := clock.NewFake(t0)
	first := acquire(t, b, "same", c)
	second, err := lease.NewContender(bucket.New(b, "db1"), opts("same", c, nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := second.Acquire(context.Background()); !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("second process, first look: %v", err)
	}
	c.Advance(ttl) // the first one stalls (a long GC, a frozen VM)
	l2, err := second.Acquire(context.Background())
	if err != nil {
		t.Fatalf("second process after the first stalled: %v", err)
	}
	if first.MayWrite() {
		t.Fatal("the stalled first process may still write")
	}
	err = first.Renew(context.Background())
	if !errors.Is(err, lease.ErrLost) {
		t.Fatalf("the first process's renewal: %v, want ErrLost", err)
	}
	if !l2.MayWrite() {
		t.Fatal("the second process lost its lease to the first one's renewal")
	}
}

// bestEffortDeclared acquires on a driver that declares best-effort, with
// the switch unset; it reports whether the lease ran and what it logged.
func bestEffortDeclared(t *testing.T) (acquired bool, logged string, err error) {
	t.Helper()
	var log logBuffer
	o := opts("me", clock.NewFake(t0), nil)
	o.Logger = log.logger()
	_, err = lease.Acquire(context.Background(), bucket.New(besteffort.Wrap(machineClocksOnly()), "db1"), o)
	return err == nil, log.String(), err
}

func TestBestEffortDeclarationNeedsTheSwitch(t *testing.T) {
	acquired, _, err := bestEffortDeclared(t)
	if acquired || !errors.Is(err, lease.ErrPreconditionsIgnored) || !strings.Contains(err.Error(), lease.EnvConditional+"=off") {
		t.Fatalf("a best-effort driver without the switch: %v", err)
	}
	// With the switch: best-effort, logged at WARN, reported.
	var log logBuffer
	o := opts("me", clock.NewFake(t0), nil)
	o.Logger = log.logger()
	o.Seams().Getenv = func(string) string { return "off" }
	l, err := lease.Acquire(context.Background(), bucket.New(besteffort.Wrap(machineClocksOnly()), "db1"), o)
	if err != nil {
		t.Fatal(err)
	}
	if l.Exclusion() != driver.BestEffort || !strings.Contains(log.String(), "level=WARN") {
		t.Fatalf("exclusion %v, log %q", l.Exclusion(), log.String())
	}
}

func TestFailedProbeCleanUpThatFailsSaysWhatItLeft(t *testing.T) {
	inner := machineClocksOnly()
	b := &faulty.Failing{Bucket: &faulty.Bucket{Bucket: inner, Ignore: faulty.IgnoreIfAbsent, Only: onLease},
		Before: func(ctx context.Context, op, key string, cond driver.Condition) error {
			if op == "put" && onLease(key) && isMatch(cond) {
				return errors.New("503 Service Unavailable")
			}
			return nil
		}}
	c := clock.NewFake(t0)
	_, err := lease.Acquire(context.Background(), bucket.New(b, "db1"), opts("me", c, nil))
	if !errors.Is(err, lease.ErrPreconditionsIgnored) {
		t.Fatalf("acquire: %v", err)
	}
	r, _, ok := readRecord(t, inner)
	if !ok || r.TTLSeconds == 0 {
		t.Fatalf("the clean-up was refused, yet the record is %+v (exists %v)", r, ok)
	}
	until := r.RenewedAt.Add(r.TTL()).Format(time.RFC3339)
	for _, want := range []string{"clean-up failed", "may be left", "db1/LEASE", until, "503"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
}

func TestFailedProbeCleansUpAfterTheAcquireContextEnded(t *testing.T) {
	inner := machineClocksOnly()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var absent atomic.Int32
	b := &faulty.LostReply{Bucket: &faulty.Bucket{Bucket: inner, Ignore: faulty.IgnoreIfAbsent, Only: onLease},
		Drop: func(op, key string, cond driver.Condition) bool {
			if op == "put" && onLease(key) && cond == driver.IfAbsent() && absent.Add(1) == 2 {
				cancel() // the caller gives up as the probe's answer arrives
			}
			return false
		}}
	_, err := lease.Acquire(ctx, bucket.New(b, "db1"), opts("me", clock.NewFake(t0), nil))
	if !errors.Is(err, lease.ErrPreconditionsIgnored) {
		t.Fatalf("acquire: %v", err)
	}
	if !strings.Contains(err.Error(), "left blocked") {
		t.Fatalf("the clean-up did not run after the acquire's context ended: %v", err)
	}
}

func TestFailedProbeCleanUpLeavesAnotherInstancesRecord(t *testing.T) {
	inner := machineClocksOnly()
	c := clock.NewFake(t0)
	var other driver.Version
	var wrote atomic.Bool
	b := &faulty.Failing{Bucket: &faulty.Bucket{Bucket: inner, Ignore: faulty.IgnoreIfAbsent, Only: onLease},
		Before: func(_ context.Context, op, key string, cond driver.Condition) error {
			if op == "put" && onLease(key) {
				wrote.Store(true)
			}
			if op == "get" && other == "" && wrote.Load() {
				// Between our probe and our clean-up, another instance
				// writes its record (the service ignores conditions).
				a, err := inner.Put(context.Background(), key, []byte(foreign("other", c.Wall(), 30)), driver.PutOptions{})
				other = a.Version
				return err
			}
			return nil
		}}
	if _, err := lease.Acquire(context.Background(), bucket.New(b, "db1"), opts("me", c, nil)); !errors.Is(err, lease.ErrPreconditionsIgnored) {
		t.Fatalf("acquire: %v", err)
	}
	if r, v, ok := readRecord(t, inner); !ok || v != other || r.InstanceID != "other" {
		t.Fatalf("the clean-up touched another instance's record: %+v at %s", r, v)
	}
}

// hungRenewal starts a renewal that hangs on the network (ignoring
// cancellation until unblocked), then releases with a cancelled context. It
// reports whether the lease stopped writing and Release returned.
func hungRenewal(t *testing.T) (stopped bool) {
	t.Helper()
	inner := machineClocksOnly()
	entered, unblock := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var armed atomic.Bool
	b := &faulty.Failing{Bucket: inner, Before: func(_ context.Context, op, key string, cond driver.Condition) error {
		if op == "put" && isMatch(cond) && armed.Load() {
			once.Do(func() { close(entered) })
			<-unblock // a request that does not notice cancellation
		}
		return nil
	}}
	c := clock.NewFake(t0)
	l := acquire(t, b, "me", c)
	armed.Store(true)
	c.Advance(ttl / 3)
	renewed := make(chan error, 1)
	go func() { renewed <- l.Renew(context.Background()) }()
	<-entered
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	released := make(chan error, 1)
	go func() { released <- l.Release(ctx) }()
	defer func() { close(unblock); <-renewed; <-released }()
	deadline := time.After(5 * time.Second) // a bound, not a measurement
	for {
		select {
		case err := <-released:
			released <- err
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Release with a cancelled context during a hung renewal: %v", err)
			}
			if l.MayWrite() {
				t.Error("Release returned but the lease may still write")
			}
			if _, err := l.Bucket().Driver().Put(context.Background(), "x", []byte("x"), driver.PutOptions{If: driver.IfAbsent()}); !errors.Is(err, lease.ErrReleased) {
				t.Errorf("Bucket accepted a write after Release: %v", err)
			}
			select {
			case <-l.Done():
			default:
				t.Error("Done is open after Release")
			}
			return true
		case <-deadline:
			return false
		case <-time.After(time.Millisecond):
		}
	}
}

func TestReleaseDuringAHungRenewalStopsWritingFirst(t *testing.T) {
	if !hungRenewal(t) {
		t.Fatal("Release waited for a hung renewal, ignoring its context, with the lease still writable")
	}
}

// stuckClockRenewal renews with a stuck wall clock through a connection
// that resets before the request reaches the service. It returns what went
// wrong, or "".
func stuckClockRenewal(t *testing.T) string {
	t.Helper()
	var reset atomic.Bool
	b := &faulty.Failing{Bucket: machineClocksOnly(), Before: func(_ context.Context, op, key string, cond driver.Condition) error {
		if op == "put" && reset.Load() {
			return errors.New("connection reset by peer")
		}
		return nil
	}}
	c := clock.NewFake(t0)
	l := acquire(t, b, "me", c)
	c.AdvanceMono(ttl / 3) // the wall clock is stuck
	before, v := l.Deadline(), l.Version()
	reset.Store(true)
	if err := l.Renew(context.Background()); err == nil {
		return "a renewal that never reached the service was reported as a success"
	}
	if l.Version() != v || !l.Deadline().Equal(before) {
		return "a renewal that never reached the service moved the fence"
	}
	return ""
}

func TestStuckClockRenewalThatNeverLandedIsNotASuccess(t *testing.T) {
	check(t, stuckClockRenewal)
}

func TestRenewAfterTheDeadlineWritesNothing(t *testing.T) {
	counted := &faulty.Counting{Bucket: machineClocksOnly()}
	c := clock.NewFake(t0)
	l := acquire(t, counted, "me", c)
	c.AdvanceWall(ttl * 2 / 3) // the deadline passed; the fence timer has not fired
	_, putsBefore, _ := counted.Counts()
	if err := l.Renew(context.Background()); !errors.Is(err, lease.ErrFenced) {
		t.Fatalf("renew after the deadline: %v, want ErrFenced", err)
	}
	if _, puts, _ := counted.Counts(); puts != putsBefore {
		t.Fatalf("renew after the deadline sent %d writes", puts-putsBefore)
	}
	if l.MayWrite() {
		t.Fatal("MayWrite after the deadline")
	}
}

func TestRenewalReplyAfterTheDeadlineFences(t *testing.T) {
	var c *clock.Fake
	var armed atomic.Bool
	b := &faulty.Failing{Bucket: machineClocksOnly(), Before: func(_ context.Context, op, key string, cond driver.Condition) error {
		if op == "put" && isMatch(cond) && armed.Load() {
			c.AdvanceWall(ttl) // the reply takes long; only the wall clock shows it
		}
		return nil
	}}
	c = clock.NewFake(t0)
	l := acquire(t, b, "me", c)
	armed.Store(true)
	c.Advance(ttl / 3)
	if err := l.Renew(context.Background()); !errors.Is(err, lease.ErrFenced) {
		t.Fatalf("a renewal whose reply came after the deadline: %v, want ErrFenced", err)
	}
	select {
	case <-l.Done():
	default:
		t.Fatal("Done is open: in-flight work was never told to stop")
	}
	if l.MayWrite() {
		t.Fatal("the late renewal un-fenced the lease")
	}
}

func TestWallClockPastTheDeadlineClosesDoneWithinAPoll(t *testing.T) {
	c := clock.NewFake(t0)
	l := acquire(t, machineClocksOnly(), "me", c)
	c.AdvanceWall(ttl * 2 / 3) // a suspension: monotonic clock frozen
	if l.MayWrite() {
		t.Fatal("MayWrite after the wall-clock deadline")
	}
	c.AdvanceMono(time.Second)
	select {
	case <-l.Done():
	default:
		t.Fatal("Done still open a second after the wall clock passed the deadline")
	}
	if !errors.Is(l.Err(), lease.ErrFenced) {
		t.Fatalf("Err = %v, want ErrFenced", l.Err())
	}
}

func TestAcquireFenceIsTimedFromBeforeTheProbes(t *testing.T) {
	var c *clock.Fake
	b := &faulty.Failing{Bucket: machineClocksOnly(), Before: func(_ context.Context, op, key string, cond driver.Condition) error {
		if op == "get" || cond == driver.IfAbsent() {
			return nil
		}
		c.AdvanceMono(time.Second) // the probes are slow
		return nil
	}}
	c = clock.NewFake(t0)
	start := c.Wall()
	l := acquire(t, b, "me", c)
	if want := start.Add(ttl * 2 / 3); !l.Deadline().Equal(want) {
		t.Fatalf("deadline %v, want %v: timed from after the probes", l.Deadline(), want)
	}
	c.AdvanceMono(ttl*2/3 - time.Second) // with the second spent probing: 2/3 TTL since the acquire was sent
	if l.MayWrite() {
		t.Fatal("MayWrite past two thirds of a TTL after the acquire was sent")
	}
}

func TestBreakOverwritesOnlyTheVersionLookedAt(t *testing.T) {
	counted := &faulty.Counting{Bucket: ignoresDeleteCondition{machineClocksOnly()}}
	c := clock.NewFake(t0)
	h := acquire(t, counted, "holder", c)
	looked := h.Version()
	_, _, acquireDeletes := counted.Counts() // the acquire probe's scratch key
	c.Advance(ttl / 3)
	if err := h.Renew(context.Background()); err != nil {
		t.Fatal(err)
	}
	err := lease.Break(context.Background(), bucket.New(counted, "db1"), looked, c.Wall(), false)
	if !errors.Is(err, driver.ErrPrecondition) {
		t.Fatalf("break of a version that changed: %v, want ErrPrecondition", err)
	}
	if r, v, _ := readRecord(t, counted); v != h.Version() || r.InstanceID != "holder" {
		t.Fatalf("break changed a lease it had not looked at: %+v", r)
	}
	renewed, _, _ := readRecord(t, counted)
	if err := lease.Break(context.Background(), bucket.New(counted, "db1"), h.Version(), c.Wall(), false); err != nil {
		t.Fatalf("break of the current version: %v", err)
	}
	// A fresh lease: the break record keeps it fresh until it would have
	// gone stale (TestBreakWaitsForTheBrokenHoldersFence).
	if r, _, ok := readRecord(t, counted); !ok || r.InstanceID != admin.BreakerID || r.TTLSeconds != renewed.TTLSeconds || !r.RenewedAt.Equal(renewed.RenewedAt) {
		t.Fatalf("after break: %+v", r)
	}
	if _, _, deletes := counted.Counts(); deletes-acquireDeletes != 1 {
		t.Fatalf("break sent %d deletes; want one, of its probe key (the lease object was checked above)", deletes-acquireDeletes)
	}
	if err := h.Renew(context.Background()); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("the broken holder's renewal: %v, want ErrLost", err)
	}
}

func TestBreakOnAServiceIgnoringIfMatchFailsClosed(t *testing.T) {
	b := &faulty.Bucket{Bucket: machineClocksOnly(), Ignore: faulty.IgnoreIfMatch}
	v := put(t, b, foreign("dead", t0.Add(-time.Hour), 30))
	if err := lease.Break(context.Background(), bucket.New(b, "db1"), v, t0, false); !errors.Is(err, lease.ErrPreconditionsIgnored) {
		t.Fatalf("break on a service that ignores If-Match: %v", err)
	}
}

func TestKeyOfAPrefixWithATrailingSlash(t *testing.T) {
	for prefix, want := range map[string]string{"db1": "db1/LEASE", "db1/": "db1/LEASE", "db1//": "db1/LEASE", "": "LEASE", "/": "LEASE"} {
		if got := admin.Key(prefix); got != want {
			t.Errorf("Key(%q) = %q, want %q", prefix, got, want)
		}
	}
}

func isMatch(c driver.Condition) bool { _, ok := c.Match(); return ok }

// declaresNone is a driver that declares no exclusion, and says why.
type declaresNone struct{ driver.Bucket }

func (declaresNone) Capabilities() driver.Capabilities {
	return driver.Capabilities{Reason: "the directory is on an nfs file system; add ?assert=yes"}
}

func TestRefusedBucketNamesTheDriversReason(t *testing.T) {
	_, err := lease.Acquire(context.Background(), bucket.New(declaresNone{machineClocksOnly()}, "db1"), opts("me", clock.NewFake(t0), nil))
	if !errors.Is(err, lease.ErrPreconditionsIgnored) || !strings.Contains(err.Error(), "nfs file system; add ?assert=yes") {
		t.Fatalf("acquire on a driver that declares no exclusion: %v", err)
	}
}

// Second checks of three properties the mutation run found caught by one
// test only.

func TestRenewalWhoseRetryWasRefusedAfterItLandedIsNotLost(t *testing.T) {
	inner := machineClocksOnly()
	var drop atomic.Bool
	b := &faulty.LostReply{Bucket: inner, AsRefusal: true, Drop: func(op, _ string, cond driver.Condition) bool {
		return drop.Load() && op == "put" && isMatch(cond)
	}}
	c := clock.NewFake(t0)
	l := acquire(t, b, "me", c)
	for range 3 { // three renewals in a row, each answered by a refused retry
		c.Advance(ttl / 3)
		drop.Store(true)
		err := l.Renew(context.Background())
		drop.Store(false)
		if err != nil {
			t.Fatalf("a renewal that landed, whose client's retry was refused: %v", err)
		}
	}
	if _, v, _ := readRecord(t, inner); l.Version() != v || !l.MayWrite() {
		t.Fatalf("lease at %s (may write %v), stored %s", l.Version(), l.MayWrite(), v)
	}
}

// TestAcquireFenceRunsFromWhenTheWriteWasSent: every write to the lease
// object spends 3 s on the network. A create makes the lease with its
// second write (the one that carries the epoch, beside the probes), sent 3 s
// in, once the first has landed; the fence runs two thirds of a TTL from
// when that write was sent, not from when an answer came (at least 6 s in).
func TestAcquireFenceRunsFromWhenTheWriteWasSent(t *testing.T) {
	var c *clock.Fake
	b := &faulty.Failing{Bucket: machineClocksOnly(), Before: func(_ context.Context, op, key string, cond driver.Condition) error {
		if op == "put" && onLease(key) {
			c.AdvanceMono(3 * time.Second)
		}
		return nil
	}}
	c = clock.NewFake(t0)
	start := c.Mono()
	l := acquire(t, b, "me", c)
	c.AdvanceMono(3*time.Second + ttl*2/3 - (c.Mono() - start) - time.Millisecond)
	if !l.MayWrite() {
		t.Fatal("fenced before two thirds of a TTL after the write that made the lease was sent")
	}
	c.AdvanceMono(time.Millisecond)
	if l.MayWrite() {
		t.Fatal("the acquire's fence ran from when a reply arrived, not from when the write was sent")
	}
}

func TestSuspectWatchRestartsWhenTheRecordChanges(t *testing.T) {
	b := machineClocksOnly()
	c := clock.NewFake(t0)
	put(t, b, "not a lease record")
	con, err := lease.NewContender(bucket.New(b, "db1"), opts("me", c, nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := con.Acquire(context.Background()); !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("first look at a suspect record: %v", err)
	}
	c.Advance(ttl / 2)
	put(t, b, "still not a lease record") // someone rewrote it: a new version
	if _, err := con.Acquire(context.Background()); !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("after the suspect record changed: %v", err)
	}
	c.Advance(ttl / 2) // a TTL since the first look, half a TTL since the change
	if _, err := con.Acquire(context.Background()); !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("took over a suspect record that changed half a TTL ago: %v", err)
	}
	c.Advance(ttl / 2)
	if _, err := con.Acquire(context.Background()); err != nil {
		t.Fatalf("a suspect record unchanged for a TTL: %v", err)
	}
}

func TestReleasedEventSaysWhetherAnythingWasReleased(t *testing.T) {
	b := machineClocksOnly()
	var ev events
	ac, bc := clock.NewFake(t0), clock.NewFake(t0)
	a, err := lease.Acquire(context.Background(), bucket.New(b, "db1"), opts("A", ac, &ev))
	if err != nil {
		t.Fatal(err)
	}
	ac.Advance(ttl)
	bc.Advance(ttl)
	acquire(t, b, "B", bc)
	if err := a.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	ev.mu.Lock()
	last := ev.list[len(ev.list)-1]
	ev.mu.Unlock()
	if last.Kind != lease.EventReleased || !strings.Contains(last.Detail, "nothing to release") || !strings.Contains(last.Detail, "instance B") {
		t.Fatalf("the fenced holder's release reported %v %q", last.Kind, last.Detail)
	}
}

// refusesCurrentIfMatch is a service that refuses If-Match even with the
// current version, as Ceph RGW 16.2 does with a quoted ETag.
type refusesCurrentIfMatch struct{ driver.Bucket }

func (r refusesCurrentIfMatch) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	if isMatch(opts.If) {
		return driver.Attrs{}, &driver.OpError{Driver: "test", Op: "put", Key: key, Cond: opts.If, Kind: driver.ErrPrecondition, Err: errors.New("412 Precondition Failed")}
	}
	return r.Bucket.Put(ctx, key, data, opts)
}

func TestAServiceRefusingAValidIfMatchFailsClosedAtAcquire(t *testing.T) {
	inner := machineClocksOnly()
	_, err := lease.Acquire(context.Background(), bucket.New(refusesCurrentIfMatch{inner}, "db1"), opts("me", clock.NewFake(t0), nil))
	if !errors.Is(err, lease.ErrPreconditionsIgnored) || !strings.Contains(err.Error(), "If-Match on the current version") {
		t.Fatalf("acquire where no renewal could succeed: %v", err)
	}
	// Its clean-up (an If-Match overwrite) is refused too: the error says
	// what was left and until when.
	if r, _, ok := readRecord(t, inner); ok && r.TTLSeconds != 0 && !strings.Contains(err.Error(), "may be left") {
		t.Fatalf("a fresh record was left and the error does not say so: %v", err)
	}
}

// TestBreakWaitsForTheBrokenHoldersFence: after a break of a fresh lease
// no contender takes it over until the broken record would have gone
// stale (a TTL after its last renewal, by the contender's clock), whatever
// that clock reads within the third of a TTL of skew the lease absorbs;
// the broken holder learns it lost at its next renewal. With
// Break allowing overlap the contender takes it at once.
func TestBreakWaitsForTheBrokenHoldersFence(t *testing.T) {
	for _, skew := range []time.Duration{0, ttl / 3, -ttl / 3} {
		b := machineClocksOnly()
		c := clock.NewFake(t0)
		h := acquire(t, b, "holder", c)
		c.Advance(ttl / 3)
		if err := h.Renew(context.Background()); err != nil {
			t.Fatal(err)
		}
		rec, v, _ := readRecord(t, b)
		fence := h.Deadline()
		c.Advance(time.Second)
		if err := lease.Break(context.Background(), bucket.New(b, "db1"), v, c.Wall(), false); err != nil {
			t.Fatalf("break: %v", err)
		}
		if err := h.Renew(context.Background()); !errors.Is(err, lease.ErrLost) {
			t.Fatalf("the broken holder's renewal: %v, want ErrLost", err)
		}
		// The contender's clock is skew ahead of the holder's (and the
		// breaker's).
		cc := clock.NewFake(c.Wall().Add(skew))
		for cc.Wall().Add(-skew).Before(fence) || cc.Wall().Before(rec.RenewedAt.Add(rec.TTL())) {
			_, err := lease.Acquire(context.Background(), bucket.New(b, "db1"), opts("next", cc, nil))
			var held *lease.HeldError
			if !errors.As(err, &held) || held.Holder() != admin.BreakerID {
				t.Fatalf("skew %v: acquire at %v, %v before the broken holder's fence and %v before the record's stale time: %v, want held by %s",
					skew, cc.Wall(), fence.Sub(cc.Wall().Add(-skew)), rec.RenewedAt.Add(rec.TTL()).Sub(cc.Wall()), err, admin.BreakerID)
			}
			cc.Advance(time.Second)
		}
		if _, err := lease.Acquire(context.Background(), bucket.New(b, "db1"), opts("next", cc, nil)); err != nil {
			t.Fatalf("skew %v: acquire once the broken record is stale: %v", skew, err)
		}
	}

	b := machineClocksOnly()
	c := clock.NewFake(t0)
	h := acquire(t, b, "holder", c)
	if err := lease.Break(context.Background(), bucket.New(b, "db1"), h.Version(), c.Wall(), true); err != nil {
		t.Fatalf("break allowing overlap: %v", err)
	}
	if _, err := lease.Acquire(context.Background(), bucket.New(b, "db1"), opts("next", c, nil)); err != nil {
		t.Fatalf("acquire after a break allowing overlap: %v", err)
	}
}
