package lease_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/clock"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/mem"
	"github.com/mushroomdb/bucketlease/internal/oldlease"
	"github.com/mushroomdb/bucketlease/lease"
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
	return &slowData{Bucket: mem.New(), started: make(chan string, 16), gate: make(chan struct{})}
}

func (s *slowData) Put(ctx context.Context, key string, data []byte, cond driver.Condition) (driver.Version, error) {
	if key == "db1/LEASE" {
		return s.Bucket.Put(ctx, key, data, cond)
	}
	s.started <- key
	<-s.gate
	return s.Bucket.Put(context.Background(), key, data, cond)
}

func (s *slowData) Delete(ctx context.Context, key string, cond driver.Condition) error {
	if key == "db1/LEASE" {
		return s.Bucket.Delete(ctx, key, cond)
	}
	s.started <- key
	<-s.gate
	return s.Bucket.Delete(context.Background(), key, cond)
}

// releaseBeforeItsWritesReturn is finding 1 of the third safety round: the
// old holder's retention delete is in flight when it releases. It returns
// what went wrong, or "".
func releaseBeforeItsWritesReturn(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	s := newSlowData()
	if _, err := s.Bucket.Put(ctx, "db1/chunks/1", []byte("chunk"), driver.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	ac, bc := clock.NewFake(t0), clock.NewFake(t0)
	a := acquire(t, s, "A", ac)
	deleted := make(chan error, 1)
	go func() { deleted <- a.Bucket().Delete(ctx, "chunks/1", driver.Condition{}) }()
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
	if _, err := lease.Acquire(ctx, s, "db1", opts("B", bc, nil)); !errors.Is(err, lease.ErrHeld) {
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
	if _, err := lease.Acquire(ctx, s, "db1", opts("B", bc, nil)); err != nil {
		return "the successor could not acquire after the release: " + err.Error()
	}
	return ""
}

func TestReleaseWaitsForTheWritesItCancelled(t *testing.T) {
	if bad := releaseBeforeItsWritesReturn(t); bad != "" {
		t.Fatal(bad)
	}
	withOld(t, &oldlease.ReleaseDoesNotWait, func() {
		if releaseBeforeItsWritesReturn(t) == "" {
			t.Fatal("negative control: a Release that does not wait for its writes went unnoticed")
		}
	})
}

// A write that starts after Release has begun is refused, and Release
// waits for no write that was refused.
func TestWriteAfterReleaseIsRefusedAndNotWaitedFor(t *testing.T) {
	ctx := context.Background()
	b := mem.New()
	l := acquire(t, b, "A", clock.NewFake(t0))
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Bucket().Put(ctx, "chunks/1", []byte("x"), driver.IfAbsent()); !errors.Is(err, lease.ErrReleased) {
		t.Fatalf("put after release: %v, want ErrReleased", err)
	}
	short, cancel := context.WithTimeout(ctx, time.Millisecond)
	defer cancel()
	<-short.Done()
	if err := l.Release(short); err != nil && errors.Is(err, lease.ErrWritesInFlight) {
		t.Fatalf("a refused write was counted as in flight: %v", err)
	}
}

// Finding 5: Release called from an OnEvent callback during a renewal
// returns instead of deadlocking.
func TestReleaseFromOnEventDuringARenewal(t *testing.T) {
	ctx := context.Background()
	b := mem.New()
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
	if l, err = lease.Acquire(ctx, b, "db1", o); err != nil {
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
