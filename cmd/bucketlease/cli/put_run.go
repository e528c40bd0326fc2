package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/bounded"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/exitcode"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/put"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/report"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/internal/leaseseam"
	"github.com/mushroomdb/bucketlease/internal/location"
	"github.com/mushroomdb/bucketlease/lease"
)

// putOneShot takes the lease at loc, streams the body under it, and
// releases it.
func putOneShot(ctx context.Context, e *env, f *putFlags, loc *location.Location, h put.Header, in *put.Input) (driver.Version, *put.Body, error) {
	cond, err := h.Condition()
	if err != nil {
		return "", nil, exitcode.Usagef("%v", err)
	}
	b, err := openUnder(ctx, loc)
	if err != nil {
		return "", nil, err
	}
	prefix := loc.Prefix
	b = bounded.New(b, requestTimeout(f.hold.ttl), loc, "a third of the TTL")
	w := io.Discard
	if f.verbose {
		w = e.stderr
	}
	p := report.NewPrinter(w, false, f.verbose)
	p.Start()
	defer p.Close(2 * time.Second)
	logger, err := newLogger(e.stderr, "off", false)
	if err != nil {
		return "", nil, err
	}
	c, err := lease.NewContender(bucket.New(b, prefix), leaseseam.With(&lease.Options{TTL: f.hold.ttl, InstanceID: f.hold.instanceID, Logger: logger, OnEvent: p.Event}, leaseseam.Seams{Getenv: e.getenv}))
	if err != nil {
		return "", nil, exitcode.Usagef("%v", err)
	}
	waitCtx, stopWaiting := signalContext(ctx, holdSignals()...)
	l, err := firstTry(waitCtx, e, c, h.Key, f.hold.wait)
	if err == nil && l == nil {
		l, err = acquire(waitCtx, c, b, prefix, &f.hold, p)
	}
	if err != nil {
		stopWaiting()
		return "", nil, explain(loc, err)
	}
	// A signal now cuts the upload off (it is aborted) and releases:
	// registered before the wait lets go of the signals, so none is
	// missed, and one that came as the lease was taken stops the put
	// before it uploads anything.
	upCtx, stopUp := signalContext(ctx, holdSignals()...)
	defer stopUp()
	stopWaiting()
	if signalled(waitCtx) && ctx.Err() == nil {
		code, why := interruptCode(waitCtx)
		return "", nil, releaseAfter(l, loc, b, prefix, p, exitcode.With(code, fmt.Errorf("put %s: %s as the lease was taken; nothing was uploaded", h.Key, why)))
	}
	k := &keeper{l: l, parent: ctx}
	k.start()
	defer k.stop()
	// Under --if-absent, a key that exists is refused before the producer
	// starts or a byte of the body is read; the conditional commit still
	// settles a race with another writer.
	if err := put.RefuseExisting(upCtx, l.Bucket().Driver(), h.Key, cond); err != nil {
		k.stop()
		return "", nil, releaseAfter(l, loc, b, prefix, p, put.ClassExit(put.Classify(l, err), explain(loc, fmt.Errorf("put %s: %w", h.Key, err))))
	}
	checked, body, err := in.Open(h.Key)
	if err != nil {
		k.stop()
		return "", nil, releaseAfter(l, loc, b, prefix, p, put.Exit(err))
	}
	defer in.Close()
	stopForward := context.AfterFunc(upCtx, func() { in.Forward(upCtx) })
	v, err := put.Fenced(upCtx, l, h.Key, body, cond, &driver.StreamOptions{PartSize: h.PartSize, Concurrency: h.Concurrency})
	var late bool
	v, late, err = put.Settle(ctx, l, h.Key, v, err)
	stopForward()
	k.stop()
	var result error
	if late {
		result = put.Exit(&put.LateError{Key: h.Key, Version: v})
	}
	if err != nil {
		v = ""
		result = uploadFailed(upCtx, l, loc, h.Key, checked, err)
	}
	return v, checked, releaseAfter(l, loc, b, prefix, p, result)
}

// uploadFailed is put URL's error for an upload of key under l that
// failed with err: a signal's exit 128+N, the input's own failure, or the
// service's error as put classifies it.
func uploadFailed(upCtx context.Context, l *lease.Lease, loc *location.Location, key string, checked *put.Body, err error) error {
	class := put.Classify(l, err)
	switch {
	case signalled(upCtx):
		code, why := interruptCode(upCtx)
		return exitcode.With(code, fmt.Errorf("put %s: %s: the upload was aborted, nothing was written: %w", key, why, err))
	case checked.Failed() != nil:
		return put.Exit(checked.Failed())
	case upCtx.Err() != nil && class == put.ClassError:
		code, why := interruptCode(upCtx)
		return exitcode.With(code, fmt.Errorf("put %s: %s: the upload was aborted: %w", key, why, err))
	default:
		return put.ClassExit(class, explain(loc, fmt.Errorf("put %s: %w", key, err)))
	}
}

// errParentsLease: put URL inside hold names the lease its own hold holds.
var errParentsLease = errors.New("the lease is held by the hold that runs this command")

// firstTry makes put URL's first attempt at the lease. If the lease is
// held by the hold that runs this put (its key and holder are the ones
// hold put in the command's environment), waiting would wait for put's own
// parent forever: it refuses at once (exit 2) and says to run "put KEY"
// through hold. Otherwise, if put is to wait, it says once, on stderr, who
// holds the lease, and returns nil for acquire to wait.
func firstTry(ctx context.Context, e *env, c *lease.Contender, key string, wait bool) (*lease.Lease, error) {
	l, err := c.Acquire(ctx)
	var held *lease.HeldError
	if err == nil || !errors.As(err, &held) {
		return l, nil // taken; or a failure, which acquire retries and explains
	}
	parent := e.getenv("BUCKETLEASE_INSTANCE_ID")
	if parent != "" && held.Holder() == parent && held.Key == e.getenv("BUCKETLEASE_KEY") && !held.SameID {
		return nil, exitcode.With(exitcode.Usage, fmt.Errorf("put %s: %w (instance %s holds %s): put URL would wait for its own parent forever. Inside hold, run \"bucketlease put %s …\" without the URL: it writes under hold's lease",
			key, errParentsLease, parent, held.Key, key))
	}
	if wait {
		fmt.Fprintf(e.stderr, "put %s: waiting for the lease: %v\n", key, held)
	}
	return nil, nil
}

// putViaHold streams the body to the hold whose socket is sock and returns
// what it answered. A signal (SIGINT, SIGTERM, SIGHUP) goes on to the
// producer, cuts the body off (hold aborts the upload), and put exits
// 128+N.
func putViaHold(ctx context.Context, sock string, h put.Header, in *put.Input) (driver.Version, *put.Body, error) {
	c, err := put.Dial(sock, h)
	if err != nil {
		return "", nil, err
	}
	defer c.Close()
	sigCtx, stopSignals := signalContext(ctx, holdSignals()...)
	defer stopSignals()
	v, body, err := c.Upload(sigCtx, in)
	if errors.Is(err, put.ErrInterrupted) {
		code, why := interruptCode(sigCtx)
		return "", body, exitcode.With(code, fmt.Errorf("put %s: %s: the upload was aborted, nothing was written", h.Key, why))
	}
	return v, body, put.Exit(err)
}

// signalOf is the signal that ended ctx, one from signalContext, or nil.
func signalOf(ctx context.Context) os.Signal {
	var sc signalCause
	if errors.As(context.Cause(ctx), &sc) {
		return sc.sig
	}
	return nil
}
