package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/term"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/lease"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// acquire takes the lease, or with --wait keeps trying until it can.
func acquire(ctx context.Context, c *lease.Contender, b driver.Bucket, prefix string, f *holdFlags, p *printer) (*lease.Lease, error) {
	if f.wait && f.waitTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.waitTimeout)
		defer cancel()
	}
	var last *lease.HeldError
	var lastSeen time.Time // when last was read, by our clock
	failures := 0
	vanished := false
	for {
		// A lease seen fresh, now gone without a release: something other
		// than bucketlease deleted it, and its holder may still be
		// writing. Take it only once its holder's fence has passed.
		if gate := vanishedGate(last, lastSeen); !gate.IsZero() && time.Now().Before(gate) {
			if st, err := admin.Inspect(ctx, bucket.New(b, prefix), time.Now()); err == nil && st.State == admin.Free {
				if !vanished {
					vanished = true
					p.note("lease-vanished", fmt.Sprintf("lease %s vanished while %s held it, without a release (something other than bucketlease deleted it); its holder may still be writing, so waiting until %s, a TTL after its last renewal, before taking it",
						st.Key, holderText(last.Holder()), utc(gate)), func(r *record) { r.Key, r.Holder, r.TakeoverAt = st.Key, last.Holder(), utc(gate) })
				}
				if err := sleep(ctx, min(time.Until(gate)+10*time.Millisecond, waitPoll(f.ttl))); err != nil {
					return nil, stoppedWaiting(ctx, last, nil)
				}
				continue
			}
		}
		l, err := c.Acquire(ctx)
		var held *lease.HeldError
		switch {
		case err == nil:
			return l, nil
		case ctx.Err() != nil:
			return nil, stoppedWaiting(ctx, last, err)
		case errors.Is(err, lease.ErrInstanceInUse):
			//lint:ignore ST1005 the line after the error is a sentence for people, as printed
			return nil, withCode(exitInstanceInUse, fmt.Errorf("%w\nAnother live process holds this lease under the same instance id (%s). Give each process its own --instance-id; waiting would not help.",
				err, c.InstanceID()))
		case errors.Is(err, lease.ErrPreconditionsIgnored):
			return nil, withCode(exitProbeFailed, err)
		case errors.As(err, &held):
			failures = 0
			if !f.wait && held.SameID {
				return nil, sameIDError(held, c.InstanceID())
			}
			if !f.wait {
				//lint:ignore ST1005 the line after the error is a sentence for people, as printed
				return nil, withCode(exitHeld, fmt.Errorf("%w\nRun with --wait to take it over when it is free.", err))
			}
			if f.verbose || last == nil || last.Holder() != held.Holder() || last.State != held.State {
				p.held(held, true)
			}
			last, lastSeen, vanished = held, time.Now(), false
		case f.wait && retriable(err) && failures < maxWaitFailures:
			failures++
			p.note("retrying", fmt.Sprintf("acquire failed (%d of %d in a row): %v", failures, maxWaitFailures, err), nil)
		default:
			return nil, err
		}
		if err := sleep(ctx, retryDelay(held, failures, f.ttl)); err != nil {
			return nil, stoppedWaiting(ctx, last, nil)
		}
	}
}

// sameIDError is the error for a fresh record that names this instance
// id but that this process did not write, seen once, without --wait: it
// cannot yet tell another live process with the same id from this
// instance's previous process that died, so it says both; --wait tells
// them apart (exit 6 when the record is renewed, a takeover once stale).
func sameIDError(held *lease.HeldError, id string) error {
	//lint:ignore ST1005 the line after the error is a sentence for people, as printed
	return withCode(exitInstanceInUse, fmt.Errorf("%w\nEither another live process holds this lease under the same --instance-id %s (give each process its own --instance-id), or this instance's previous process died and left it, and it goes stale at %s: run with --wait to take it over then (--wait exits 6 at once if the record is renewed meanwhile).",
		held, term.Safe(id), utc(held.TakeoverAt)))
}

// vanishedGate is when a waiter that last saw the fresh lease last (at
// seen) may take the lease if it finds the object gone: the takeover time
// it was told, on its own monotonic clock. Zero when there is no such
// lease (none seen, or a suspect one).
func vanishedGate(last *lease.HeldError, seen time.Time) time.Time {
	if last == nil || last.State != admin.Fresh {
		return time.Time{}
	}
	return seen.Add(last.TakeoverAt.Sub(last.Now))
}

// maxWaitFailures bounds how many acquire errors in a row (other than a
// held lease) --wait rides out.
const maxWaitFailures = 5

// retriable reports whether an acquire error may pass: not a service that
// ignores preconditions, not an instance id in use, not a key the driver
// can never store (a LEASE that is a directory, say), and not a wrong
// setting.
func retriable(err error) bool {
	return !errors.Is(err, lease.ErrPreconditionsIgnored) && !errors.Is(err, lease.ErrInstanceInUse) &&
		!errors.Is(err, driver.ErrInvalidKey) && !errors.Is(err, context.Canceled)
}

// waitPoll is how often --wait looks at a held lease again, so that it
// sees a release at once: a sixth of the TTL, from 250 ms to 2 s.
func waitPoll(ttl time.Duration) time.Duration {
	return min(max(ttl/6, 250*time.Millisecond), 2*time.Second)
}

// retryDelay is how long --wait sleeps before the next attempt: until the
// lease could be taken over (a little after) or the next look, whichever
// is sooner; or a backoff after an error.
func retryDelay(held *lease.HeldError, failures int, ttl time.Duration) time.Duration {
	if held == nil {
		return time.Duration(1<<min(failures, 5)) * time.Second
	}
	return min(max(held.TakeoverAt.Sub(held.Now)+100*time.Millisecond, 100*time.Millisecond), waitPoll(ttl))
}

// stoppedWaiting is the error for a wait that a signal or --wait-timeout
// ended. acquireErr is the error of the acquire it cut short, if any:
// that acquire finished on its own and released anything it had written,
// and its error says which.
func stoppedWaiting(ctx context.Context, last *lease.HeldError, acquireErr error) error {
	if acquireErr != nil && !errors.Is(acquireErr, lease.ErrHeld) {
		code, why := interruptCode(ctx)
		if errors.Is(ctx.Err(), context.DeadlineExceeded) && !errors.As(context.Cause(ctx), new(signalCause)) {
			code, why = exitHeld, "--wait-timeout passed"
		}
		return withCode(code, interrupted{fmt.Errorf("%s during an acquire: %w", why, acquireErr)})
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) && !errors.As(context.Cause(ctx), new(signalCause)) {
		if last != nil {
			return withCode(exitHeld, fmt.Errorf("--wait-timeout passed before the lease could be taken: %w", last))
		}
		return withCode(exitHeld, errors.New("--wait-timeout passed before the lease could be taken"))
	}
	code, why := interruptCode(ctx)
	if last != nil {
		return withCode(code, interrupted{fmt.Errorf("%s before the lease could be taken: %w", why, last)})
	}
	return withCode(code, interrupted{fmt.Errorf("%s before the lease could be taken", why)})
}
