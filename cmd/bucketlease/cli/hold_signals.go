package cli

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/supervise"
)

// errInterrupted matches hold's errors for a signal that came before the
// lease was held (errors.Is).
var errInterrupted = errors.New("interrupted")

// interrupted is such an error.
type interrupted struct{ err error }

func (e interrupted) Error() string        { return e.err.Error() }
func (e interrupted) Unwrap() error        { return e.err }
func (e interrupted) Is(target error) bool { return target == errInterrupted }

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
	return exitInterrupted, "interrupted"
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
