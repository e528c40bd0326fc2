package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/internal/leaseseam"
	"github.com/mushroomdb/bucketlease/lease"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// putOneShot takes the lease at loc, streams the body under it, and
// releases it.
func putOneShot(ctx context.Context, e *env, f *putFlags, loc *driver.Location, h putHeader, in *putInput) (driver.Version, *checkedReader, error) {
	cond, err := h.condition()
	if err != nil {
		return "", nil, usageErrorf("%v", err)
	}
	b, err := openUnder(ctx, loc)
	if err != nil {
		return "", nil, err
	}
	prefix := loc.Prefix
	b = withDeadlines(b, requestTimeout(f.hold.ttl), loc, "a third of the TTL")
	w := io.Discard
	if f.verbose {
		w = e.stderr
	}
	p := &printer{w: w, verbose: f.verbose}
	p.start()
	defer p.close(2 * time.Second)
	logger, err := newLogger(e.stderr, "off", false)
	if err != nil {
		return "", nil, err
	}
	c, err := lease.NewContender(bucket.New(b, prefix), leaseseam.With(&lease.Options{TTL: f.hold.ttl, InstanceID: f.hold.instanceID, Logger: logger, OnEvent: p.event}, leaseseam.Seams{Getenv: e.getenv}))
	if err != nil {
		return "", nil, usageErrorf("%v", err)
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
		return "", nil, releaseAfter(l, loc, b, prefix, p, withCode(code, fmt.Errorf("put %s: %s as the lease was taken; nothing was uploaded", h.Key, why)))
	}
	k := &keeper{l: l, parent: ctx}
	k.start()
	defer k.stop()
	// Under --if-absent, a key that exists is refused before the producer
	// starts or a byte of the body is read; the conditional commit still
	// settles a race with another writer.
	if err := refuseExisting(upCtx, l.Bucket().Driver(), h.Key, cond); err != nil {
		k.stop()
		return "", nil, releaseAfter(l, loc, b, prefix, p, putError(putClass(l, err), explain(loc, fmt.Errorf("put %s: %w", h.Key, err))))
	}
	checked, body, err := in.open(h.Key)
	if err != nil {
		k.stop()
		return "", nil, releaseAfter(l, loc, b, prefix, p, err)
	}
	defer in.close()
	stopForward := context.AfterFunc(upCtx, func() { in.forward(upCtx) })
	v, err := putFenced(upCtx, l, h.Key, body, cond, &driver.StreamOptions{PartSize: h.PartSize, Concurrency: h.Concurrency})
	var late bool
	v, late, err = fencedOutcome(ctx, l, h.Key, v, err)
	stopForward()
	k.stop()
	var result error
	if late {
		result = storedLate(h.Key, v)
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
func uploadFailed(upCtx context.Context, l *lease.Lease, loc *driver.Location, key string, checked *checkedReader, err error) error {
	class := putClass(l, err)
	switch {
	case signalled(upCtx):
		code, why := interruptCode(upCtx)
		return withCode(code, fmt.Errorf("put %s: %s: the upload was aborted, nothing was written: %w", key, why, err))
	case inputCode(checked, nil) != nil:
		return inputCode(checked, nil)
	case upCtx.Err() != nil && class == putClassError:
		code, why := interruptCode(upCtx)
		return withCode(code, fmt.Errorf("put %s: %s: the upload was aborted: %w", key, why, err))
	default:
		return putError(class, explain(loc, fmt.Errorf("put %s: %w", key, err)))
	}
}

// fencedOutcome settles what a write of key through l's fenced bucket did,
// from its result v, err. late reports, with err nil, an object stored
// but perhaps late (storedLate): the service answered only after the
// lease was fenced, or the fence cut the write off while its last request
// was on the way and the key holds an object with l's stamp all the same.
// A write the fence cut off that left nothing there yet returns its error,
// saying that a request still on its way may land later. Otherwise it
// returns v and err as they were. put URL and put inside hold
// (putServer) both settle their writes with it.
func fencedOutcome(ctx context.Context, l *lease.Lease, key string, v driver.Version, err error) (driver.Version, bool, error) {
	if err == nil {
		return v, !l.MayWrite(), nil
	}
	if putClass(l, err) == putClassFenced {
		if sv, ok := storedAnyway(ctx, l, key); ok {
			return sv, true, nil
		}
		// The read-back proves nothing of a request still on its way.
		err = fmt.Errorf("%w; the upload was aborted and %s held nothing of this lease's when put read it back, "+
			"but a request already on its way (a write held up in the network) may still land: bucketlease list --late names it if it does", err, key)
	}
	return v, false, err
}

// storedAnyway reports whether key holds an object stamped by l, and its
// version: a write the fence cut off while its last request was on the
// way, which the service stored all the same (a put woken from a pause
// learns of its fence before it reads the answer waiting for it). Where
// the driver keeps no stamps it cannot tell, and says no.
func storedAnyway(ctx context.Context, l *lease.Lease, key string) (driver.Version, bool) {
	want, ok := admin.Stamp{Epoch: l.Epoch(), Instance: admin.StampedInstance(l.InstanceID())}, leaseseam.Inside(l).Stamped
	if !ok {
		return "", false
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	rc, a, err := l.Bucket().Driver().Get(rctx, key, driver.GetOptions{Metadata: true})
	if err != nil {
		return "", false
	}
	rc.Close()
	got, ok := admin.StampOf(a.Metadata)
	return a.Version, ok && got == want
}

// storedLate is put's outcome when the service answered its commit only
// after the lease was fenced: the write was sent in time, but nothing
// shows when it landed, which may have been after another holder took the
// prefix over.
func storedLate(key string, v driver.Version) error {
	return withCode(exitStoredLate, fmt.Errorf("put %s: stored (version %s), but the service answered only after the lease was fenced (%w): "+
		"put was paused or its request held up, so the object may have landed after another holder took the prefix over, a late write; "+
		"bucketlease list --late names it if it did, and a restore must not trust it then", key, v, lease.ErrFenced))
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
		return nil, withCode(exitUsage, fmt.Errorf("put %s: %w (instance %s holds %s): put URL would wait for its own parent forever. Inside hold, run \"bucketlease put %s …\" without the URL: it writes under hold's lease",
			key, errParentsLease, parent, held.Key, key))
	}
	if wait {
		fmt.Fprintf(e.stderr, "put %s: waiting for the lease: %v\n", key, held)
	}
	return nil, nil
}

// refuseExisting refuses a write under --if-absent to a key that exists,
// with one read before the body is streamed. A read that is not allowed
// (write-only credentials) proceeds: the commit's condition decides.
func refuseExisting(ctx context.Context, b driver.Bucket, key string, cond driver.Condition) error {
	if cond != driver.IfAbsent() {
		return nil
	}
	rc, a, err := b.Get(ctx, key, driver.GetOptions{})
	v := a.Version
	switch {
	case err == nil:
		rc.Close()
		return fmt.Errorf("refused, the key %s exists (version %s): %w (--if-absent); nothing was written: put a date in the key, or pass --if-match %s or --overwrite",
			key, v, driver.ErrPrecondition, v)
	case errors.Is(err, driver.ErrNotExist), errors.Is(err, driver.ErrPermission):
		return nil
	}
	return fmt.Errorf("reading the key %s before writing it: %w; nothing was written", key, err)
}

// putFenced streams body into key through l.Bucket. A body that blocks (a
// pipe whose writer stalls) is cut off at the fence, so that the upload
// aborts then rather than when the writer goes on.
func putFenced(ctx context.Context, l *lease.Lease, key string, body io.Reader, cond driver.Condition, opts *driver.StreamOptions) (driver.Version, error) {
	fctx, cancel := l.Fence(ctx)
	defer cancel()
	pr, pw := io.Pipe()
	go func() {
		_, err := io.CopyBuffer(pw, body, make([]byte, 1<<20))
		pw.CloseWithError(err)
	}()
	stop := context.AfterFunc(fctx, func() {
		why := context.Cause(fctx)
		if !l.MayWrite() {
			if why = l.Err(); why == nil {
				why = lease.ErrFenced
			}
		}
		pr.CloseWithError(fmt.Errorf("the body was cut off: %w", why))
	})
	defer stop()
	defer pr.Close()
	a, err := l.Bucket().Driver().PutStream(fctx, key, pr, driver.PutOptions{If: cond}, opts)
	return a.Version, err
}
