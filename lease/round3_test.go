package lease_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/clock"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/drivertest/faulty"
	"github.com/mushroomdb/bucketlease/lease"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// slowData is a store whose writes to keys other than the lease object
// have left the client: once started they ignore their context and land
// only when the test lets them (land), as a request already on the wire
// does. started is signalled as each one begins.
type slowData struct {
	driver.Bucket
	started chan string
	gate    chan struct{}
}

func newSlowData() *slowData {
	return &slowData{Bucket: machineClocksOnly(), started: make(chan string, 16), gate: make(chan struct{})}
}

func (s *slowData) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	if key == "db1/LEASE" || admin.IsScratchKey(key) {
		return s.Bucket.Put(ctx, key, data, opts)
	}
	s.started <- key
	<-s.gate
	return s.Bucket.Put(context.Background(), key, data, opts)
}

func (s *slowData) Delete(ctx context.Context, key string, cond driver.Condition) error {
	if key == "db1/LEASE" || admin.IsScratchKey(key) {
		return s.Bucket.Delete(ctx, key, cond)
	}
	s.started <- key
	<-s.gate
	return s.Bucket.Delete(context.Background(), key, cond)
}

// releaseBeforeItsWritesReturn: the old holder's retention delete is in flight when it releases. It returns
// what went wrong, or "".
func releaseBeforeItsWritesReturn(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	s := newSlowData()
	if _, err := s.Bucket.Put(ctx, "db1/chunks/1", []byte("chunk"), driver.PutOptions{If: driver.IfAbsent()}); err != nil {
		t.Fatal(err)
	}
	ac, bc := clock.NewFake(t0), clock.NewFake(t0)
	a := acquire(t, s, "A", ac)
	deleted := make(chan error, 1)
	go func() { deleted <- a.Bucket().Driver().Delete(ctx, "chunks/1", driver.Condition{}) }()
	<-s.started

	// A release whose context ends first must not mark the lease released.
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	err := a.Release(short)
	cancel()
	if err == nil {
		close(s.gate)
		<-deleted
		return "Release returned nil while a write it cancelled was still in flight"
	}
	if !errors.Is(err, lease.ErrWritesInFlight) {
		close(s.gate)
		<-deleted
		return "Release's error does not wrap ErrWritesInFlight: " + err.Error()
	}
	if _, err := lease.Acquire(ctx, bucket.New(s, "db1"), opts("B", bc, nil)); !errors.Is(err, lease.ErrHeld) {
		close(s.gate)
		<-deleted
		return "a successor acquired while the old holder's delete was in flight: " + errString(err)
	}
	// Released again with time to spare: it waits for the write, then
	// releases.
	released := make(chan error, 1)
	go func() { released <- a.Release(ctx) }()
	select {
	case err := <-released:
		close(s.gate)
		<-deleted
		return "the second Release returned before the write did: " + errString(err)
	case <-time.After(50 * time.Millisecond):
	}
	close(s.gate)
	<-deleted
	if err := <-released; err != nil {
		return "the second Release failed after the write returned: " + err.Error()
	}
	if _, err := lease.Acquire(ctx, bucket.New(s, "db1"), opts("B", bc, nil)); err != nil {
		return "the successor could not acquire after the release: " + err.Error()
	}
	return ""
}

func TestReleaseWaitsForTheWritesItCancelled(t *testing.T) {
	check(t, releaseBeforeItsWritesReturn)
}

// A write that starts after Release has begun is refused, and Release
// waits for no write that was refused.
func TestWriteAfterReleaseIsRefusedAndNotWaitedFor(t *testing.T) {
	ctx := context.Background()
	b := machineClocksOnly()
	l := acquire(t, b, "A", clock.NewFake(t0))
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Bucket().Driver().Put(ctx, "chunks/1", []byte("x"), driver.PutOptions{If: driver.IfAbsent()}); !errors.Is(err, lease.ErrReleased) {
		t.Fatalf("put after release: %v, want ErrReleased", err)
	}
	short, cancel := context.WithTimeout(ctx, time.Millisecond)
	defer cancel()
	<-short.Done()
	if err := l.Release(short); err != nil && errors.Is(err, lease.ErrWritesInFlight) {
		t.Fatalf("a refused write was counted as in flight: %v", err)
	}
}

// Release called from an OnEvent callback during a renewal
// returns instead of deadlocking.
func TestReleaseFromOnEventDuringARenewal(t *testing.T) {
	ctx := context.Background()
	b := machineClocksOnly()
	c := clock.NewFake(t0)
	var l *lease.Lease
	var once sync.Once
	released := make(chan error, 1)
	o := opts("A", c, nil)
	o.OnEvent = func(e lease.Event) {
		if e.Kind == lease.EventRenewed {
			once.Do(func() { released <- l.Release(ctx) })
		}
	}
	var err error
	if l, err = lease.Acquire(ctx, bucket.New(b, "db1"), o); err != nil {
		t.Fatal(err)
	}
	renewed := make(chan error, 1)
	go func() { renewed <- l.Renew(ctx) }()
	select {
	case err := <-renewed:
		if err != nil {
			t.Fatalf("renew: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Renew did not return: Release from OnEvent deadlocked")
	}
	if err := <-released; err != nil {
		t.Fatalf("release from OnEvent: %v", err)
	}
	if r, _, ok := readRecord(t, b); !ok || r.TTLSeconds != 0 {
		t.Fatalf("the lease was not marked released: %+v", r)
	}
}

// dropFirstIfAbsent is a path (a proxy, a gateway, an old client) that
// drops If-None-Match from the first write of one instance: armed by the
// test, it also lets the racer act just before that write goes out.
type dropFirstIfAbsent struct {
	driver.Bucket
	mu     sync.Mutex
	done   bool
	before func() // runs just before the dropped write, if set
}

func (d *dropFirstIfAbsent) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	d.mu.Lock()
	first := !d.done && opts.If == driver.IfAbsent()
	if first {
		d.done = true
	}
	d.mu.Unlock()
	if first {
		if d.before != nil {
			d.before()
		}
		opts.If = driver.Condition{}
	}
	return d.Bucket.Put(ctx, key, data, opts)
}

// refusedAcquireOverALiveHolder: holder A is fresh; B's path
// drops If-None-Match on its first write (every write, for the
// steady-state case); then a third instance C tries. It returns what went
// wrong, or "".
func refusedAcquireOverALiveHolder(t *testing.T, ignoreAll bool) string {
	t.Helper()
	ctx := context.Background()
	inner := machineClocksOnly()
	c := clock.NewFake(t0)
	a := acquire(t, inner, "A", c)
	var path driver.Bucket = &dropFirstIfAbsent{Bucket: inner}
	if ignoreAll {
		path = &faulty.Bucket{Bucket: inner, Ignore: faulty.IgnoreIfAbsent}
	}
	if _, err := lease.Acquire(ctx, bucket.New(path, "db1"), opts("B", c, nil)); err == nil {
		return "B acquired over A's fresh lease"
	}
	if _, err := lease.Acquire(ctx, bucket.New(inner, "db1"), opts("C", c, nil)); !errors.Is(err, lease.ErrHeld) {
		return "C acquired while A's lease was fresh: " + errString(err)
	}
	if err := a.Renew(ctx); err != nil {
		return "A's lease was damaged by B's refused acquire: " + err.Error()
	}
	return ""
}

func TestRefusedAcquireNeverDestroysALiveLease(t *testing.T) {
	for _, all := range []bool{false, true} {
		if bad := refusedAcquireOverALiveHolder(t, all); bad != "" {
			t.Fatalf("path ignoring If-None-Match on every write %v: %s", all, bad)
		}
	}
}

// raceOverAFreeKey is the race that neither reading first nor proving the
// path on a scratch key can close: the key is free when B reads it, A
// acquires in the instant before B's write, and B's path drops
// If-None-Match on the lease object only (so the scratch proof passes):
// B's write goes over A's lease. B's acquire fails closed on the probes;
// C must not get in before A has fenced. It returns what went wrong, or "".
func raceOverAFreeKey(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	inner := machineClocksOnly()
	c := clock.NewFake(t0)
	var a *lease.Lease
	path := &dropFirstIfAbsent{Bucket: &faulty.Bucket{Bucket: inner, Ignore: faulty.IgnoreIfAbsent, Only: onLease},
		before: func() { a = acquire(t, inner, "A", c) }}
	_, err := lease.Acquire(ctx, bucket.New(path, "db1"), opts("B", c, nil))
	if !errors.Is(err, lease.ErrPreconditionsIgnored) {
		return "B's acquire on a path ignoring If-None-Match: " + errString(err)
	}
	if !contains(err.Error(), "left blocked") || !contains(err.Error(), "fresh until") {
		return "B's error does not say that the prefix was left blocked, and until when: " + err.Error()
	}
	// A may write until two thirds of a TTL after its acquire; C, reading
	// just before that, must find the prefix held.
	late := clock.NewFake(t0.Add(ttl*2/3 - time.Second))
	if _, err := lease.Acquire(ctx, bucket.New(inner, "db1"), opts("C", late, nil)); !errors.Is(err, lease.ErrHeld) {
		return "C acquired while the overwritten holder A could still write: " + errString(err)
	}
	if a.MayWrite() {
		if err := a.Renew(ctx); !errors.Is(err, lease.ErrLost) {
			return "A's renewal after being overwritten: " + errString(err)
		}
	}
	return ""
}

func TestRefusedAcquireBlocksThePrefixUntilAnOverwrittenHolderFenced(t *testing.T) {
	check(t, raceOverAFreeKey)
}

// firstHeaderDropped is the simulator's seeds 131217, 161103, 168589,
// 194422 and 208086: B reads the key free, A acquires
// in the instant before B's first write, and B's path drops If-None-Match
// from that first write only, so its later probes pass. Proving the path
// on a scratch key first makes that first write the scratch key's, and
// B's write to the lease object carries its header. It returns what went
// wrong, or "".
func firstHeaderDropped(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	inner := machineClocksOnly()
	c := clock.NewFake(t0)
	var a *lease.Lease
	path := &dropFirstIfAbsent{Bucket: inner, before: func() { a = acquire(t, inner, "A", c) }}
	b, err := lease.Acquire(ctx, bucket.New(path, "db1"), opts("B", c, nil))
	if a == nil {
		t.Fatal("the path dropped no header: the test tests nothing")
	}
	if err == nil && a.MayWrite() {
		return fmt.Sprintf("B acquired (version %s) over A's lease while A may still write: two writers", b.Version())
	}
	if !errors.Is(err, lease.ErrHeld) {
		return "B's acquire, with A holding: " + errString(err) + ", want ErrHeld"
	}
	if err := a.Renew(ctx); err != nil {
		return "A's renewal: " + err.Error()
	}
	return ""
}

func TestFirstWriteOfAnAcquireCarriesAProvenHeader(t *testing.T) {
	check(t, firstHeaderDropped)
}

// The contender whose acquire left the prefix blocked does not take its
// own blocking record back before it is stale.
func TestBlockedContenderWaitsOutItsOwnBlock(t *testing.T) {
	ctx := context.Background()
	inner := machineClocksOnly()
	c := clock.NewFake(t0)
	path := &faulty.Bucket{Bucket: inner, Ignore: faulty.IgnoreIfAbsent, Only: onLease}
	con, err := lease.NewContender(bucket.New(path, "db1"), opts("B", c, nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := con.Acquire(ctx); !errors.Is(err, lease.ErrPreconditionsIgnored) {
		t.Fatalf("first acquire: %v", err)
	}
	// The path is fixed; the block still holds for the contender itself.
	honest, err := lease.NewContender(bucket.New(inner, "db1"), opts("B", c, nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := con.Acquire(ctx); err == nil || !contains(err.Error(), "blocked until") {
		t.Fatalf("acquire again at once: %v, want a refusal naming the block", err)
	}
	if _, err := honest.Acquire(ctx); !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("another process with the same id: %v, want ErrHeld", err)
	}
	c.Advance(ttl + time.Second)
	if _, err := honest.Acquire(ctx); err != nil {
		t.Fatalf("after the block went stale: %v", err)
	}
}

// ignoreIfMatchOnBreak is a path that drops If-Match from every write, as
// a proxy that strips it would: the holder's own renewals go another way.
type ignoreIfMatch struct{ driver.Bucket }

func (i ignoreIfMatch) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	if _, ok := opts.If.Match(); ok {
		opts.If = driver.Condition{}
	}
	return i.Bucket.Put(ctx, key, data, opts)
}

// breakOfAnOldVersion: an operator breaks the version they
// looked at, after the holder renewed, on a path that drops If-Match. It
// returns what went wrong, or "".
func breakOfAnOldVersion(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	inner := machineClocksOnly()
	c := clock.NewFake(t0)
	h := acquire(t, inner, "holder", c)
	looked := h.Version()
	c.Advance(ttl / 3)
	if err := h.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	if err := lease.Break(ctx, bucket.New(ignoreIfMatch{inner}, "db1"), looked, c.Wall(), false); err == nil {
		return "Break of an old version succeeded"
	}
	if err := lease.Break(ctx, bucket.New(ignoreIfMatch{inner}, "db1"), h.Version(), c.Wall(), false); !errors.Is(err, lease.ErrPreconditionsIgnored) {
		return "Break on a path that drops If-Match: " + errString(err) + ", want ErrPreconditionsIgnored"
	}
	if r, v, ok := readRecord(t, inner); !ok || v != h.Version() || r.InstanceID != "holder" {
		return "Break overwrote the renewed lease on a path that drops If-Match"
	}
	return ""
}

func TestBreakNeverOverwritesANewerVersion(t *testing.T) {
	check(t, breakOfAnOldVersion)
}

// clockSteppedBack: the holder's wall clock is stepped back
// by an hour (NTP correcting it, a VM restored) while it holds the lease,
// and it keeps renewing. It returns what went wrong, or "".
func clockSteppedBack(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	b := machineClocksOnly()
	hc, rc := clock.NewFake(t0), clock.NewFake(t0)
	var ev events
	h, err := lease.Acquire(ctx, bucket.New(b, "db1"), opts("holder", hc, &ev))
	if err != nil {
		t.Fatal(err)
	}
	hc.AdvanceWall(-time.Hour)
	// The holder renews on schedule for two TTLs; a reader, whose clock
	// is right, looks after each renewal.
	for range 6 {
		hc.Advance(ttl / 3)
		rc.Advance(ttl / 3)
		renewErr := h.Renew(ctx)
		st, err := admin.Inspect(ctx, bucket.New(b, "db1"), rc.Wall())
		if err != nil {
			t.Fatal(err)
		}
		if st.State != admin.Fresh && h.MayWrite() {
			return "a reader finds the lease " + st.State.String() + " while its holder may still write"
		}
		if renewErr != nil {
			if !errors.Is(renewErr, lease.ErrFenced) || !contains(renewErr.Error(), "wall clock") {
				return "the renewal failed without saying that the wall clock is wrong: " + renewErr.Error()
			}
			return ""
		}
	}
	return "the holder renewed for two TTLs with a wall clock an hour behind"
}

func TestHolderWhoseWallClockSteppedBackFencesItself(t *testing.T) {
	check(t, clockSteppedBack)
}

// A wall clock that only ticks coarsely, or was slewed a little, is not a
// clock that lies: the holder keeps renewing.
func TestSmallWallClockStepsDoNotFence(t *testing.T) {
	ctx := context.Background()
	b := machineClocksOnly()
	c := clock.NewFake(t0)
	l, err := lease.Acquire(ctx, bucket.New(b, "db1"), opts("holder", c, nil))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		c.Advance(ttl / 3)
		if i%2 == 0 {
			c.AdvanceWall(-2 * time.Second)
		} else {
			c.AdvanceWall(2 * time.Second)
		}
		if err := l.Renew(ctx); err != nil {
			t.Fatalf("renewal %d: %v", i, err)
		}
	}
	c.AdvanceWall(time.Hour) // a suspension the monotonic clock did not count
	if err := l.Renew(ctx); !errors.Is(err, lease.ErrFenced) {
		t.Fatalf("after the wall clock jumped forward an hour: %v, want ErrFenced", err)
	}
}

// staleReads answers a read of the lease object with the version before
// the latest, once armed, and fails the renewal that goes with it, as an
// eventually consistent gateway whose reads lag its writes can.
type staleReads struct {
	driver.Bucket
	mu      sync.Mutex
	armed   bool
	history [][]byte
}

func (s *staleReads) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	s.mu.Lock()
	armed := s.armed
	s.mu.Unlock()
	if armed {
		return driver.Attrs{}, errors.New("503 Slow Down")
	}
	v, err := s.Bucket.Put(ctx, key, data, opts)
	if err == nil && key == "db1/LEASE" {
		s.mu.Lock()
		s.history = append(s.history, data)
		s.mu.Unlock()
	}
	return v, err
}

func (s *staleReads) Get(ctx context.Context, key string, opts driver.GetOptions) (io.ReadCloser, driver.Attrs, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.armed || len(s.history) < 2 {
		return s.Bucket.Get(ctx, key, opts)
	}
	old := s.history[len(s.history)-2]
	return io.NopCloser(bytes.NewReader(old)), driver.Attrs{Version: driver.Version(fmt.Sprintf("%x", sha256.Sum256(old))[:16])}, nil
}

// A read that lags the renewal before it is not a takeover by
// a twin: the renewal is retried, not lost.
func TestStaleReadAfterARenewalIsNotALoss(t *testing.T) {
	ctx := context.Background()
	b := &staleReads{Bucket: machineClocksOnly()}
	c := clock.NewFake(t0)
	l, err := lease.Acquire(ctx, bucket.New(b, "db1"), opts("me", c, nil))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		c.Advance(ttl / 3)
		if err := l.Renew(ctx); err != nil {
			t.Fatal(err)
		}
	}
	b.mu.Lock()
	b.armed = true
	b.mu.Unlock()
	c.Advance(ttl / 3)
	err = l.Renew(ctx)
	if err == nil || errors.Is(err, lease.ErrLost) || errors.Is(err, lease.ErrInstanceInUse) {
		t.Fatalf("renewal with a stale read back: %v, want a retryable error", err)
	}
	b.mu.Lock()
	b.armed = false
	b.mu.Unlock()
	if err := l.Renew(ctx); err != nil {
		t.Fatalf("the retry: %v", err)
	}
}

// steppedBackReacquire, on the clock fence: a
// holder fenced by its stepped-back clock must not take its own record
// straight back with the same Contender and stamp from that clock. It
// returns what went wrong, or "".
func steppedBackReacquire(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	b := machineClocksOnly()
	c := clock.NewFake(t0)
	con, err := lease.NewContender(bucket.New(b, "db1"), opts("me", c, nil))
	if err != nil {
		t.Fatal(err)
	}
	l, err := con.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c.AdvanceWall(-time.Hour)
	if l.MayWrite() {
		return "MayWrite after the wall clock stepped back an hour"
	}
	c.Advance(ttl / 3)
	if _, err := con.Acquire(ctx); !errors.Is(err, lease.ErrClock) {
		return "acquiring again with the same Contender: " + errString(err) + ", want ErrClock"
	}
	return ""
}

func TestSteppedBackClockDoesNotReacquire(t *testing.T) {
	check(t, steppedBackReacquire)
}

// An acquire whose scratch-key proof takes long (a slow service) stamps its
// record after the proof, not before it: the record does not reach the
// lease object already old, and the fence is timed from the later stamp.
func TestSlowProofStampsTheRecordAfterIt(t *testing.T) {
	c := clock.NewFake(t0)
	slow := &faulty.Failing{Bucket: machineClocksOnly(), Before: func(_ context.Context, op, key string, _ driver.Condition) error {
		if op == "put" && admin.IsScratchKey(key) {
			c.Advance(5 * time.Second)
		}
		return nil
	}}
	l, err := lease.Acquire(context.Background(), bucket.New(slow, "db1"), opts("me", c, nil))
	if err != nil {
		t.Fatal(err)
	}
	proved := t0.Add(15 * time.Second) // three scratch writes, five seconds each
	r, _, _ := readRecord(t, slow)
	if r.RenewedAt.Before(proved) {
		t.Errorf("renewed_at %v was stamped before the proof ended (%v): the record arrived %v old",
			r.RenewedAt, proved, proved.Sub(r.RenewedAt))
	}
	if want := proved.Add(ttl * 2 / 3); l.Deadline().Before(want) {
		t.Errorf("deadline %v, want %v: timed from the stamp after the proof", l.Deadline(), want)
	}
}

// contenderClockSteppedBack is the simulator's seed 96458: a
// process started beside a holder, on the same machine, has stamped no
// record yet when the machine's wall clock steps back an hour. The
// holder's record now looks stamped an hour in the future (suspect); once
// it has stood unchanged for a TTL, the new process takes it over. It
// returns what went wrong, or "".
func contenderClockSteppedBack(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	b := machineClocksOnly()
	hc, nc, rc := clock.NewFake(t0), clock.NewFake(t0), clock.NewFake(t0)
	if _, err := lease.Acquire(ctx, bucket.New(b, "db1"), opts("holder", hc, nil)); err != nil {
		t.Fatal(err) // the holder then stops renewing (paused)
	}
	c, err := lease.NewContender(bucket.New(b, "db1"), opts("beside", nc, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	nc.Advance(time.Second)
	nc.AdvanceWall(-time.Hour)
	var l *lease.Lease
	for i := 0; l == nil; i++ {
		l, err = c.Acquire(ctx)
		switch {
		case errors.Is(err, lease.ErrClock):
			if !contains(err.Error(), "wall clock") || !contains(err.Error(), "db1/LEASE") {
				return "the refusal does not say which key and that the wall clock is wrong: " + err.Error()
			}
			return ""
		case err != nil && !errors.Is(err, lease.ErrHeld):
			t.Fatal(err)
		case i > 10:
			return "the contender never took the suspect lease over, nor refused its clock"
		}
		nc.Advance(ttl / 3)
		rc.Advance(ttl / 3)
	}
	st, err := admin.Inspect(ctx, bucket.New(b, "db1"), rc.Wall())
	if err != nil {
		t.Fatal(err)
	}
	if st.State != admin.Fresh && l.MayWrite() {
		return "the contender took the lease over with a record a reader finds " + st.State.String() + " while it may still write"
	}
	return ""
}

func TestContenderWhoseWallClockSteppedBackRefuses(t *testing.T) {
	check(t, contenderClockSteppedBack)
}

// A contender whose clock stepped back acquires again once the clock reads
// where it should (stepped forward again, or an hour later, when it has
// caught up with where it read before the step).
func TestContenderClockRefusalHeals(t *testing.T) {
	ctx := context.Background()
	for _, heal := range []struct {
		name string
		fix  func(c *clock.Fake)
	}{
		{"stepped forward again", func(c *clock.Fake) { c.AdvanceWall(time.Hour) }},
		{"caught up", func(c *clock.Fake) { c.Advance(time.Hour - ttl/3) }},
	} {
		t.Run(heal.name, func(t *testing.T) {
			c := clock.NewFake(t0)
			con, err := lease.NewContender(bucket.New(machineClocksOnly(), "db1"), opts("a", c, nil))
			if err != nil {
				t.Fatal(err)
			}
			defer con.Close()
			c.Advance(time.Second)
			c.AdvanceWall(-time.Hour)
			if _, err := con.Acquire(ctx); !errors.Is(err, lease.ErrClock) {
				t.Fatalf("after the step back: %v, want ErrClock", err)
			}
			c.Advance(ttl) // time passes; the clock stays an hour behind
			if _, err := con.Acquire(ctx); !errors.Is(err, lease.ErrClock) {
				t.Fatalf("still an hour behind: %v, want ErrClock", err)
			}
			heal.fix(c)
			l, err := con.Acquire(ctx)
			if err != nil {
				t.Fatalf("after the clock was fixed: %v", err)
			}
			if err := l.Release(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A suspension (the wall clock runs on while the monotonic clock stands)
// and a clock slewed by less than a third of a TTL are no step back: the
// contender acquires.
func TestContenderClockSuspendedOrSlewedAcquires(t *testing.T) {
	ctx := context.Background()
	c := clock.NewFake(t0)
	con, err := lease.NewContender(bucket.New(machineClocksOnly(), "db1"), opts("a", c, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer con.Close()
	c.AdvanceWall(time.Hour)
	c.Advance(time.Second)
	c.AdvanceWall(-ttl/3 + time.Second)
	l, err := con.Acquire(ctx)
	if err != nil {
		t.Fatalf("after a suspension and a small slew: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}
