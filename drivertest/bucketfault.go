package drivertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/drivertest/faulty"
)

// Faults at the Bucket (Options.BucketFaults): for a driver that sends no
// HTTP request, the checks of a lost reply, a refused retry and a
// cancelled write put their fault where the driver meets its caller, since
// there is no wire under it. Each fault is one the world makes: a write
// the driver applied whose answer never reaches the caller, the same write
// sent again by a caller that lost that answer, a context cancelled while
// the driver is writing.

// leaseLostReplyAtBucket is lease-lost-reply-wire with the replies lost by
// a faulty.LostReply in front of the driver: the driver applies the
// acquire's and the renewal's writes, and the lease gets a lost reply.
func leaseLostReplyAtBucket(ctx context.Context, s *scope) error {
	var armed atomic.Bool
	var dropped atomic.Int64
	lossy := &faulty.LostReply{Bucket: s.b, Drop: func(op, _ string, _ driver.Condition) bool {
		if op == "put" && armed.CompareAndSwap(true, false) {
			dropped.Add(1)
			return true
		}
		return false
	}}
	return leaseLostReply(ctx, s, lossy, &armed, func() int { return int(dropped.Load()) }, "at the Bucket")
}

// retryAfterLandedAtBucket is put-retry-after-landed for a driver with no
// client library under it to retry: the caller sends a conditional write
// whose reply is lost after the driver applied it, and sends it again.
// The driver must refuse the retry (ErrPrecondition: it is a first attempt
// to the driver, and its condition no longer holds) and leave the landed
// object as it is. A driver that takes the same bytes again for success,
// or answers ErrNotExist, tells the caller that lost the first reply
// something false.
func retryAfterLandedAtBucket(ctx context.Context, s *scope) error {
	k := s.key("obj")
	v, err := seed(ctx, s.b, k, []byte("before"))
	if err != nil {
		return err
	}
	var dropped atomic.Int64
	lossy := &faulty.LostReply{Bucket: s.b, Drop: func(op, _ string, _ driver.Condition) bool {
		if op == "put" && dropped.Load() == 0 {
			dropped.Add(1)
			return true
		}
		return false
	}}
	for _, cond := range []driver.Condition{driver.IfMatch(v), driver.IfAbsent()} {
		key := k
		if cond == driver.IfAbsent() {
			key = s.key("new")
		}
		dropped.Store(0)
		_, lerr := put(ctx, lossy, key, []byte("landed"), cond)
		if !errors.Is(lerr, faulty.ErrReplyLost) {
			return fmt.Errorf("setup: the first attempt (%s): %s, want its reply lost", cond, outcome(lerr))
		}
		got, lv, rerr := read(ctx, s.b, key)
		if rerr != nil || string(got) != "landed" {
			return fmt.Errorf("setup: the first attempt (%s) did not land (Get: %s, %q)", cond, outcome(rerr), clip(got))
		}
		_, err := put(ctx, s.b, key, []byte("landed"), cond)
		switch {
		case err == nil:
			return fmt.Errorf("the retry (%s) of a write whose first attempt landed: success; its condition no longer holds, "+
				"so the driver must refuse it with ErrPrecondition, even for the bytes the key already holds", cond)
		case !errors.Is(err, driver.ErrPrecondition):
			return fmt.Errorf("the retry (%s) of a write whose first attempt landed: %s, want ErrPrecondition", cond, outcome(err))
		}
		if err := unchanged(ctx, s.b, key, []byte("landed"), lv); err != nil {
			return fmt.Errorf("after the refused retry (%s): %w", cond, err)
		}
	}
	return nil
}

// canceledMidWrite is put-canceled-mid-body for a driver that sends no
// HTTP request: the Put's context is cancelled at the driver's second look
// at it (the first after driver.Begin's), while the write is under way.
// The Put either fails with an error matching context.Canceled, leaving
// the old object or the whole new one, or succeeds with the whole new one
// stored; never a torn object, never another error.
func canceledMidWrite(ctx context.Context, s *scope) error {
	k := s.key("mid-obj")
	v, err := seed(ctx, s.b, k, []byte("small"))
	if err != nil {
		return err
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), largeSize/16)
	fired := false
	for _, cond := range []driver.Condition{driver.IfMatch(v), driver.IfAbsent()} {
		key := k
		if cond == driver.IfAbsent() {
			key = s.key("mid-new")
		}
		cctx, cancel := newCountdown(ctx, 2)
		nv, err := put(cctx, s.b, key, big, cond)
		fired = fired || cctx.Err() != nil
		cancel()
		if err != nil && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("Put (%s) cancelled once under way: %s, not context.Canceled", cond, outcome(err))
		}
		if err := canceledLeft(ctx, s, key, cond, err, nv, v, []byte("small"), big, "cancelled once under way"); err != nil {
			return err
		}
	}
	if !fired {
		return skipped{"the driver's Put looked at its context only once (driver.Begin's look), so there was no moment in its write to cancel"}
	}
	return nil
}

// canceledLeft checks what a Put of big to key, whose context was
// cancelled (how, says what), left: for a create nothing, for an update
// the old object (old at oldV) where the Put failed, or the whole new one,
// at the version the Put returned (nv) where it succeeded; never a torn
// object. err is the Put's error.
func canceledLeft(ctx context.Context, s *scope, key string, cond driver.Condition, err error, nv, oldV driver.Version, old, big []byte, what string) error {
	got, gv, rerr := read(ctx, s.b, key)
	switch {
	case err != nil && cond == driver.IfAbsent() && errors.Is(rerr, driver.ErrNotExist):
	case rerr != nil:
		return fmt.Errorf("Get after the cancelled Put (%s): %s", cond, outcome(rerr))
	case bytes.Equal(got, big) && (err != nil || gv == nv):
		// Whole: it landed before the cancellation reached the service
		// (an unknown outcome, which the error says), or it succeeded.
	case err != nil && cond != driver.IfAbsent() && bytes.Equal(got, old) && gv == oldV:
	default:
		return fmt.Errorf("after the Put (%s) %s (%s) the object holds %d bytes (%q), version %q: "+
			"neither the old object nor the whole new one at the version Put returned", cond, what, outcome(err), len(got), clip(got), gv)
	}
	return nil
}
