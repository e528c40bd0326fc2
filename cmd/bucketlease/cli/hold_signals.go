package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/exitcode"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/holding"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/report"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/supervise"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/lease"
)

// interrupted is such an error.
type interrupted struct{ err error }

func (e interrupted) Error() string        { return e.err.Error() }
func (e interrupted) Unwrap() error        { return e.err }
func (e interrupted) Is(target error) bool { return target == holding.ErrInterrupted }

// signalCause is the cause of a context that a signal ended.
type signalCause struct{ sig os.Signal }

func (c signalCause) Error() string { return "received " + supervise.SignalName(c.sig) }

// signalContext is signal.NotifyContext whose cause (context.Cause) names
// the signal, so that hold can exit 128+N for it as a shell would. Its
// stop function lets go of the signals and returns only once every signal
// that reached it is recorded as the cause, so that signalled, asked after
// stop, misses none.
func signalContext(parent context.Context, sigs ...os.Signal) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sigs...)
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		select {
		case s := <-ch:
			cancel(signalCause{s})
		case <-done:
		}
	}()
	var once bool
	return ctx, func() {
		if once {
			return
		}
		once = true
		signal.Stop(ch)
		close(done)
		<-exited
		select {
		case s := <-ch: // delivered as done closed; the goroutine chose done
			cancel(signalCause{s})
		default:
		}
		cancel(context.Canceled)
	}
}

// signalled reports whether a signal ended ctx, one from signalContext.
func signalled(ctx context.Context) bool {
	return errors.As(context.Cause(ctx), new(signalCause))
}

// interruptCode is the exit code and the words for a wait that ctx's
// signal ended: 128+N for signal N (130 for SIGINT, 143 for SIGTERM).
func interruptCode(ctx context.Context) (int, string) {
	var sc signalCause
	if errors.As(context.Cause(ctx), &sc) {
		if n, ok := sc.sig.(syscall.Signal); ok {
			return 128 + int(n), "interrupted by " + supervise.SignalName(sc.sig)
		}
	}
	return exitcode.Interrupted, "interrupted"
}

// acquire takes the lease, or with --wait keeps trying until it can
// (holding.Acquire), for at most --wait-timeout, and says why a wait that
// ctx or the timeout ended stopped.
func acquire(ctx context.Context, c *lease.Contender, b driver.Bucket, prefix string, f *holdFlags, p *report.Printer) (*lease.Lease, error) {
	if f.wait && f.waitTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.waitTimeout)
		defer cancel()
	}
	l, err := holding.Acquire(ctx, c, b, prefix, holding.Wait{Wait: f.wait, TTL: f.ttl, Verbose: f.verbose}, p)
	if se := (*holding.StoppedError)(nil); errors.As(err, &se) {
		return nil, stoppedWaiting(ctx, se.Last, se.Err)
	}
	return l, err
}

// stoppedWaiting is the error for a wait that a signal or --wait-timeout
// ended. acquireErr is the error of the acquire it cut short, if any:
// that acquire finished on its own and released anything it had written,
// and its error says which.
func stoppedWaiting(ctx context.Context, last *lease.HeldError, acquireErr error) error {
	if acquireErr != nil && !errors.Is(acquireErr, lease.ErrHeld) {
		code, why := interruptCode(ctx)
		if errors.Is(ctx.Err(), context.DeadlineExceeded) && !errors.As(context.Cause(ctx), new(signalCause)) {
			code, why = exitcode.Held, "--wait-timeout passed"
		}
		return exitcode.With(code, interrupted{fmt.Errorf("%s during an acquire: %w", why, acquireErr)})
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) && !errors.As(context.Cause(ctx), new(signalCause)) {
		if last != nil {
			return exitcode.With(exitcode.Held, fmt.Errorf("--wait-timeout passed before the lease could be taken: %w", last))
		}
		return exitcode.With(exitcode.Held, errors.New("--wait-timeout passed before the lease could be taken"))
	}
	code, why := interruptCode(ctx)
	if last != nil {
		return exitcode.With(code, interrupted{fmt.Errorf("%s before the lease could be taken: %w", why, last)})
	}
	return exitcode.With(code, interrupted{fmt.Errorf("%s before the lease could be taken", why)})
}
