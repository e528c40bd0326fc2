package drivertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/drivertest/wirefault"
)

// Failures: a cancelled context, a missing bucket, refused credentials, a
// lost reply (obligations 6, 8, 9 and 11).

var failureChecks = []check{
	check{
		name:   "context-canceled",
		expect: "with a cancelled context, Get, Put and Delete return errors matching context.Canceled and change nothing",
		run:    contextCanceled,
	},
	check{
		name:   "missing-bucket",
		expect: "on a bucket that does not exist, Get, Put and Delete fail with ErrBucketNotExist, never ErrNotExist, ErrPrecondition or success",
		needs: func(o Options) string {
			if o.MissingBucket == nil {
				return "Options.MissingBucket is not set"
			}
			return ""
		},
		run: missingBucket,
	},
	check{
		name:   "wrong-credentials",
		expect: "with credentials the service refuses, Get, Put and Delete fail with ErrPermission, never ErrNotExist, ErrPrecondition or success",
		needs: func(o Options) string {
			if o.WrongCredentials == nil {
				return "Options.WrongCredentials is not set"
			}
			return ""
		},
		run: wrongCredentials,
	},
	check{
		name: "put-canceled-mid-body",
		expect: "a Put whose context is cancelled once its request is on the wire returns an error matching " +
			"context.Canceled, and leaves the old object (or, if it landed, the whole new one), never a torn one",
		run: canceledMidBody,
	},
	check{
		name: "put-retry-after-landed",
		expect: "a conditional Put whose first attempt landed but whose reply was lost is never reported as " +
			"ErrPrecondition (a refused retry is ErrOutcomeUnknown) nor ErrNotExist",
		needs: needsWire,
		run:   retryAfterLanded,
	},
}

func contextCanceled(ctx context.Context, s *scope) error {
	k := s.key("obj")
	v, err := seed(ctx, s.b, k, []byte("keep"))
	if err != nil {
		return err
	}
	dead, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := get(dead, s.b, k); !errors.Is(err, context.Canceled) {
		return fmt.Errorf("Get: %s, not context.Canceled", outcome(err))
	}
	if _, err := put(dead, s.b, k, []byte("lost"), driver.IfMatch(v)); !errors.Is(err, context.Canceled) {
		return fmt.Errorf("Put: %s, not context.Canceled", outcome(err))
	}
	if _, err := put(dead, s.b, s.key("new"), []byte("lost"), driver.IfAbsent()); !errors.Is(err, context.Canceled) {
		return fmt.Errorf("Put IfAbsent: %s, not context.Canceled", outcome(err))
	}
	if err := s.b.Delete(dead, k, driver.Condition{}); !errors.Is(err, context.Canceled) {
		return fmt.Errorf("Delete: %s, not context.Canceled", outcome(err))
	}
	if err := absent(ctx, s.b, s.key("new")); err != nil {
		return fmt.Errorf("a cancelled Put IfAbsent: %w", err)
	}
	return unchanged(ctx, s.b, k, []byte("keep"), v)
}

func missingBucket(ctx context.Context, s *scope) error {
	mb := s.opts.MissingBucket
	k := s.prefix + "/k"
	isMissing := func(what string, err error) error {
		switch {
		case err == nil:
			return fmt.Errorf("%s on a missing bucket: success", what)
		case errors.Is(err, driver.ErrNotExist):
			return fmt.Errorf("%s on a missing bucket: ErrNotExist, which reads as a missing key (a lease would look free)", what)
		case errors.Is(err, driver.ErrPrecondition):
			return fmt.Errorf("%s on a missing bucket: ErrPrecondition, which reads as a refused condition", what)
		case !errors.Is(err, driver.ErrBucketNotExist):
			return fmt.Errorf("%s on a missing bucket: %s, want ErrBucketNotExist", what, outcome(err))
		}
		return nil
	}
	_, _, err := get(ctx, mb, k)
	if err := isMissing("Get", err); err != nil {
		return err
	}
	_, err = put(ctx, mb, k, []byte("x"), driver.IfAbsent())
	if err := isMissing("Put IfAbsent", err); err != nil {
		return err
	}
	v, err := seed(ctx, s.b, s.key("real"), []byte("x"))
	if err != nil {
		return err
	}
	_, err = put(ctx, mb, k, []byte("x"), driver.IfMatch(v))
	if err := isMissing("Put IfMatch", err); err != nil {
		return err
	}
	return isMissing("Delete", mb.Delete(ctx, k, driver.Condition{}))
}

func wrongCredentials(ctx context.Context, s *scope) error {
	wb := s.opts.WrongCredentials
	k := s.key("k")
	v, err := seed(ctx, s.b, k, []byte("x"))
	if err != nil {
		return err
	}
	refused := func(what string, err error) error {
		switch {
		case err == nil:
			return fmt.Errorf("%s with wrong credentials: success", what)
		case !errors.Is(err, driver.ErrPermission):
			return fmt.Errorf("%s with wrong credentials: %s, want ErrPermission", what, outcome(err))
		case errors.Is(err, driver.ErrNotExist), errors.Is(err, driver.ErrPrecondition):
			return fmt.Errorf("%s with wrong credentials: %s as well as ErrPermission", what, outcome(err))
		}
		return nil
	}
	_, _, err = get(ctx, wb, k)
	if err := refused("Get", err); err != nil {
		return err
	}
	_, err = put(ctx, wb, k, []byte("y"), driver.IfMatch(v))
	if err := refused("Put IfMatch", err); err != nil {
		return err
	}
	if err := refused("Delete", wb.Delete(ctx, k, driver.Condition{})); err != nil {
		return err
	}
	return unchanged(ctx, s.b, k, []byte("x"), v)
}

// canceledMidBody cancels a large Put once its request headers are written.
func canceledMidBody(ctx context.Context, s *scope) error {
	k := s.key("obj")
	v, err := seed(ctx, s.b, k, []byte("small"))
	if err != nil {
		return err
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), largeSize/16)
	for _, cond := range []driver.Condition{driver.IfMatch(v), driver.IfAbsent()} {
		key := k
		if cond == driver.IfAbsent() {
			key = s.key("new")
		}
		var fired atomic.Bool
		cctx, cancel := context.WithCancel(ctx)
		var once sync.Once
		cctx = httptrace.WithClientTrace(cctx, &httptrace.ClientTrace{
			WroteHeaders: func() { once.Do(func() { fired.Store(true); cancel() }) },
		})
		_, err := put(cctx, s.b, key, big, cond)
		cancel()
		if !fired.Load() {
			if err != nil {
				return fmt.Errorf("setup: Put (%s): %s", cond, outcome(err))
			}
			if s.opts.BucketFaults {
				return canceledMidWrite(ctx, s)
			}
			return skipped{"the driver sent no HTTP request with the caller's context, so there is no body on the wire to interrupt"}
		}
		if !errors.Is(err, context.Canceled) {
			return fmt.Errorf("Put (%s) cancelled once its headers were written: %s, not context.Canceled", cond, outcome(err))
		}
		if err := canceledLeft(ctx, s, key, cond, err, "", v, []byte("small"), big, "cancelled once its headers were written"); err != nil {
			return err
		}
	}
	return nil
}

func retryAfterLanded(ctx context.Context, s *scope) error {
	if s.opts.transportHook() == nil {
		return retryAfterLandedAtBucket(ctx, s)
	}
	var armed atomic.Bool
	tr := &wirefault.Transport{Drop: func(r *http.Request) bool {
		return wirefault.Write(r) && armed.CompareAndSwap(true, false)
	}}
	lb, err := s.wire(tr)
	if err != nil {
		return err
	}
	k := s.key("obj")
	v, err := seed(ctx, s.b, k, []byte("before"))
	if err != nil {
		return err
	}
	for _, cond := range []driver.Condition{driver.IfMatch(v), driver.IfAbsent()} {
		key := k
		if cond == driver.IfAbsent() {
			key = s.key("new")
		}
		before := tr.Dropped()
		armed.Store(true)
		_, err := put(ctx, lb, key, []byte("landed"), cond)
		armed.Store(false)
		if tr.Dropped() != before+1 {
			return fmt.Errorf("setup: the bucket Options.Transport returned sent no write through its transport (Put: %s)", outcome(err))
		}
		got, _, rerr := read(ctx, s.b, key)
		if rerr != nil {
			return fmt.Errorf("Get after the write whose reply was lost: %s", outcome(rerr))
		}
		if string(got) != "landed" {
			return fmt.Errorf("setup: the write whose reply was lost did not land (the object holds %q)", clip(got))
		}
		switch {
		case errors.Is(err, driver.ErrPrecondition):
			return fmt.Errorf("Put (%s) whose first attempt landed: ErrPrecondition, which says the object was left as it was; "+
				"a refusal after the client library retried is ErrOutcomeUnknown (driver.Op.Fail does this)", cond)
		case errors.Is(err, driver.ErrNotExist):
			return fmt.Errorf("Put (%s) whose first attempt landed: ErrNotExist", cond)
		}
	}
	return nil
}
