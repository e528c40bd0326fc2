package lease_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/driver/mem"
	"github.com/mushroomdb/bucketlease/lease"
)

// TestAcquireWaitTakesTheLeaseOnceItIsReleased: with Options.Wait, Acquire
// waits while another instance holds the lease and takes it once the
// holder releases it; without Wait, the same Acquire is refused at once
// (the control).
func TestAcquireWaitTakesTheLeaseOnceItIsReleased(t *testing.T) {
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	b := bucket.New(mem.New(), "db1")
	first, err := lease.Acquire(ctx, b, &lease.Options{InstanceID: "a", TTL: 3 * time.Second, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lease.Acquire(ctx, b, &lease.Options{InstanceID: "b", Logger: quiet}); !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("control: Acquire without Wait returned %v, want ErrHeld", err)
	}
	time.AfterFunc(300*time.Millisecond, func() { first.Release(context.Background()) })
	start := time.Now()
	second, err := lease.Acquire(ctx, b, &lease.Options{InstanceID: "b", TTL: 3 * time.Second, Logger: quiet, Wait: true})
	if err != nil {
		t.Fatalf("Acquire with Wait: %v", err)
	}
	defer second.Release(ctx)
	if waited := time.Since(start); waited < 300*time.Millisecond {
		t.Errorf("Acquire with Wait returned after %v, before the holder released", waited)
	}
}

// TestAcquireWaitStopsWhenItsContextEnds: a waiting Acquire under a lease
// that is kept renewed returns when its context ends, with an error that
// wraps the context's and ErrHeld.
func TestAcquireWaitStopsWhenItsContextEnds(t *testing.T) {
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	b := bucket.New(mem.New(), "db1")
	first, err := lease.Acquire(ctx, b, &lease.Options{InstanceID: "a", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Release(ctx)
	keep, stop := context.WithCancel(ctx)
	defer stop()
	go first.Keep(keep)

	// A 30 s TTL: the waiter looks again after 10 s, so the context ends
	// while it waits, not during an attempt.
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err = lease.Acquire(wctx, b, &lease.Options{InstanceID: "b", Logger: quiet, Wait: true})
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("Acquire with Wait under a kept lease returned %v, want an error wrapping context.DeadlineExceeded and ErrHeld", err)
	}
}
