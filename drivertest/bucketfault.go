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

// Faults at the Bucket (Options.BucketFaults), for a driver with no wire
// under it: a lost reply, a retry of a landed write, a cancelled write.

// leaseLostReplyAtBucket is lease-lost-reply-wire with a faulty.LostReply
// losing the replies of the acquire's and the renewal's applied writes.
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

// retryAfterLandedAtBucket is put-retry-after-landed at the Bucket: the
// retry of a landed write must get ErrPrecondition, the object kept.
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

// canceledMidWrite is put-canceled-mid-body at the Bucket: the Put's context
// is cancelled at the driver's second look at it. It fails matching
// context.Canceled or stores the whole body; never a torn object.
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

// canceledLeft checks what a cancelled Put of big left: on failure nothing
// (a create) or old at oldV, on success big at nv; never a torn object.
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
