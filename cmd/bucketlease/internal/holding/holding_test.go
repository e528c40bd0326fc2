package holding

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/lease"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// TestWaitTiming: --wait looks again at most every 2 s and at least every
// 250 ms, and sleeps until a takeover is possible when that comes first;
// the watch reads the lease object back every TTL/30, 100 ms to 1 s.
func TestWaitTiming(t *testing.T) {
	if got := waitPoll(30 * time.Second); got != 2*time.Second {
		t.Errorf("waitPoll(30s) = %v, want 2s", got)
	}
	if got := waitPoll(time.Second); got != 250*time.Millisecond {
		t.Errorf("waitPoll(1s) = %v, want 250ms", got)
	}
	now := time.Now()
	held := &lease.HeldError{Status: admin.Status{Now: now, TakeoverAt: now.Add(time.Second)}}
	if got := retryDelay(held, 0, 30*time.Second); got != 1100*time.Millisecond {
		t.Errorf("retryDelay before a takeover 1s away = %v, want 1.1s", got)
	}
	if got := retryDelay(nil, 2, 30*time.Second); got != 4*time.Second {
		t.Errorf("retryDelay after 2 failures = %v, want 4s", got)
	}
	for ttl, want := range map[time.Duration]time.Duration{time.Second: 100 * time.Millisecond, 15 * time.Second: 500 * time.Millisecond, time.Hour: time.Second} {
		if got := WatchInterval(ttl); got != want {
			t.Errorf("WatchInterval(%v) = %v, want %v", ttl, got, want)
		}
	}
}

// TestVanishedGate: a fresh lease seen, then gone, may be taken only at
// its takeover time on the waiter's clock; a stale one, or none, at once.
func TestVanishedGate(t *testing.T) {
	now := time.Now()
	fresh := &lease.HeldError{Status: admin.Status{State: admin.Fresh, Now: now, TakeoverAt: now.Add(10 * time.Second)}}
	seen := now.Add(time.Hour)
	if got := vanishedGate(fresh, seen); !got.Equal(seen.Add(10 * time.Second)) {
		t.Errorf("vanishedGate = %v, want %v", got, seen.Add(10*time.Second))
	}
	stale := &lease.HeldError{Status: admin.Status{State: admin.Stale, Now: now, TakeoverAt: now}}
	if !vanishedGate(stale, seen).IsZero() || !vanishedGate(nil, seen).IsZero() {
		t.Error("vanishedGate is not zero for a stale lease or none")
	}
}

// TestRetriable: --wait rides out a service's errors, not a setting or a
// key that can never work.
func TestRetriable(t *testing.T) {
	if !retriable(errors.New("connection reset")) {
		t.Error("a network error is not retried")
	}
	for _, err := range []error{lease.ErrPreconditionsIgnored, lease.ErrInstanceInUse, driver.ErrInvalidKey, context.Canceled} {
		if retriable(err) {
			t.Errorf("%v is retried", err)
		}
	}
}

// TestExitText: a command killed by a signal is named by it.
func TestExitText(t *testing.T) {
	if got := exitText(128 + int(syscall.SIGKILL)); got != "was killed by signal SIGKILL" {
		t.Errorf("exitText(137) = %q", got)
	}
	if got := exitText(3); got != "exited with status 3" {
		t.Errorf("exitText(3) = %q", got)
	}
}
