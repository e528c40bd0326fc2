package holding

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/exitcode"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/report"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/term"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/lease"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// Wait is how Acquire waits for a held lease (--wait, --verbose); the
// caller's context bounds the wait.
type Wait struct {
	Wait    bool
	TTL     time.Duration
	Verbose bool
}

// A StoppedError is Acquire's error for a wait its context ended: Last is
// the holder seen last and Err the cut-short acquire's error, if any.
type StoppedError struct {
	Last *lease.HeldError
	Err  error
}

func (e *StoppedError) Error() string {
	if e.Err != nil {
		return "stopped during an acquire: " + e.Err.Error()
	}
	return "stopped before the lease could be taken"
}

// Acquire takes the lease through c, with w.Wait retrying until it can and
// saying on p who holds it; a wait ctx ended returns a *StoppedError.
func Acquire(ctx context.Context, c *lease.Contender, b driver.Bucket, prefix string, w Wait, p *report.Printer) (*lease.Lease, error) {
	var last *lease.HeldError
	var lastSeen time.Time // when last was read, by our clock
	failures := 0
	vanished := false
	for {
		// A fresh lease gone without a release was deleted by something else,
		// and its holder may still be writing: wait for its fence.
		if gate := vanishedGate(last, lastSeen); !gate.IsZero() && time.Now().Before(gate) {
			if st, err := admin.Inspect(ctx, bucket.New(b, prefix), time.Now()); err == nil && st.State == admin.Free {
				if !vanished {
					vanished = true
					p.Note("lease-vanished", fmt.Sprintf("lease %s vanished while %s held it, without a release (something other than bucketlease deleted it); its holder may still be writing, so waiting until %s, a TTL after its last renewal, before taking it",
						st.Key, HolderText(last.Holder()), report.UTC(gate)), func(r *report.Record) { r.Key, r.Holder, r.TakeoverAt = st.Key, last.Holder(), report.UTC(gate) })
				}
				if err := sleep(ctx, min(time.Until(gate)+10*time.Millisecond, waitPoll(w.TTL))); err != nil {
					return nil, &StoppedError{Last: last}
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
			return nil, &StoppedError{Last: last, Err: err}
		case errors.Is(err, lease.ErrInstanceInUse):
			//lint:ignore ST1005 the line after the error is a sentence for people, as printed
			return nil, exitcode.With(exitcode.InstanceInUse, fmt.Errorf("%w\nAnother live process holds this lease under the same instance id (%s). Give each process its own --instance-id; waiting would not help.",
				err, c.InstanceID()))
		case errors.Is(err, lease.ErrPreconditionsIgnored):
			return nil, exitcode.With(exitcode.ProbeFailed, err)
		case errors.As(err, &held):
			failures = 0
			if !w.Wait && held.SameID {
				return nil, sameIDError(held, c.InstanceID())
			}
			if !w.Wait {
				//lint:ignore ST1005 the line after the error is a sentence for people, as printed
				return nil, exitcode.With(exitcode.Held, fmt.Errorf("%w\nRun with --wait to take it over when it is free.", err))
			}
			if w.Verbose || last == nil || last.Holder() != held.Holder() || last.State != held.State {
				p.Held(held, true)
			}
			last, lastSeen, vanished = held, time.Now(), false
		case w.Wait && retriable(err) && failures < maxWaitFailures:
			failures++
			p.Note("retrying", fmt.Sprintf("acquire failed (%d of %d in a row): %v", failures, maxWaitFailures, err), nil)
		default:
			return nil, err
		}
		if err := sleep(ctx, retryDelay(held, failures, w.TTL)); err != nil {
			return nil, &StoppedError{Last: last}
		}
	}
}

// sameIDError is for a fresh record naming this instance id that this
// process did not write: without --wait it cannot tell a live twin from
// this instance's dead predecessor, so it says both.
func sameIDError(held *lease.HeldError, id string) error {
	//lint:ignore ST1005 the line after the error is a sentence for people, as printed
	return exitcode.With(exitcode.InstanceInUse, fmt.Errorf("%w\nEither another live process holds this lease under the same --instance-id %s (give each process its own --instance-id), or this instance's previous process died and left it, and it goes stale at %s: run with --wait to take it over then (--wait exits 6 at once if the record is renewed meanwhile).",
		held, term.Safe(id), report.UTC(held.TakeoverAt)))
}

// vanishedGate is when a waiter that saw the fresh lease last at seen may
// take it if the object is gone: the takeover time on its own monotonic
// clock. Zero when none was seen or it was suspect.
func vanishedGate(last *lease.HeldError, seen time.Time) time.Time {
	if last == nil || last.State != admin.Fresh {
		return time.Time{}
	}
	return seen.Add(last.TakeoverAt.Sub(last.Now))
}

// maxWaitFailures bounds the acquire errors in a row --wait rides out.
const maxWaitFailures = 5

// retriable reports whether --wait may ride out an acquire error: not
// ignored preconditions, an id in use, an unstorable key or a bad setting.
func retriable(err error) bool {
	return !errors.Is(err, lease.ErrPreconditionsIgnored) && !errors.Is(err, lease.ErrInstanceInUse) &&
		!errors.Is(err, driver.ErrInvalidKey) && !errors.Is(err, context.Canceled)
}

// waitPoll is how often --wait looks at a held lease again, so that it
// sees a release at once: a sixth of the TTL, from 250 ms to 2 s.
func waitPoll(ttl time.Duration) time.Duration {
	return min(max(ttl/6, 250*time.Millisecond), 2*time.Second)
}

// retryDelay is how long --wait sleeps: until a takeover is possible or the
// next look, whichever is sooner; or a backoff after an error.
func retryDelay(held *lease.HeldError, failures int, ttl time.Duration) time.Duration {
	if held == nil {
		return time.Duration(1<<min(failures, 5)) * time.Second
	}
	return min(max(held.TakeoverAt.Sub(held.Now)+100*time.Millisecond, 100*time.Millisecond), waitPoll(ttl))
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
