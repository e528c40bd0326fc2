package lease

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"maps"
	"strings"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/multipart"
	"github.com/mushroomdb/bucketlease/internal/objects"
)

// Bucket returns the bucket for writes under the lease, with keys relative
// to the lease's prefix. It refuses to start a write once MayWrite is false
// (ErrFenced, ErrLost or ErrReleased), cancels writes in flight when the
// lease ends, refuses a leading "/" and the lease object itself, and stamps
// every object with admin.Stamp where the driver keeps metadata. Reads pass
// through. Closing it does nothing: the lease's bucket is its caller's.
func (l *Lease) Bucket() *bucket.Bucket { return bucket.New(l.fenced(), "") }

// fenced is the driver.Bucket under Lease.Bucket.
func (l *Lease) fenced() driver.Bucket {
	f := fencedBucket{l}
	if _, ok := l.b.(multipart.PendingLister); ok {
		return fencedPendingBucket{f}
	}
	return f
}

// fencedBucket implements every method itself, so that no method reaches
// the lease's bucket past the fence.
type fencedBucket struct{ l *Lease }

// fencedPendingBucket adds multipart.PendingLister.
type fencedPendingBucket struct{ fencedBucket }

var (
	_ io.Closer               = fencedBucket{}
	_ multipart.PendingLister = fencedPendingBucket{}
)

func (f fencedBucket) Capabilities() driver.Capabilities { return f.l.b.Capabilities() }

// full returns the bucket key of a key relative to the prefix.
func (f fencedBucket) full(op, key string, cond driver.Condition) (string, error) {
	if key == "" || strings.HasPrefix(key, "/") {
		return "", &driver.OpError{Driver: "lease", Op: op, Key: key, Cond: cond, Kind: driver.ErrInvalidKey,
			Err: errors.New("keys of Lease.Bucket are relative to the lease's prefix: not empty, no leading slash")}
	}
	if f.l.prefix == "" {
		return key, nil
	}
	return f.l.prefix + "/" + key, nil
}

func (f fencedBucket) Get(ctx context.Context, key string, opts driver.GetOptions) (io.ReadCloser, driver.Attrs, error) {
	full, err := f.full("get", key, driver.Condition{})
	if err != nil {
		return nil, driver.Attrs{}, err
	}
	return f.l.b.Get(ctx, full, opts)
}

// guard runs op on the full key under the fence, or refuses to start it.
func (f fencedBucket) guard(ctx context.Context, op, key string, cond driver.Condition, do func(context.Context, string) error) error {
	full, err := f.full(op, key, cond)
	if err != nil {
		return err
	}
	if full == f.l.key {
		return &driver.OpError{Driver: "lease", Op: op, Key: full, Cond: cond,
			Err: errors.New("refused: the lease object is written only by the lease itself")}
	}
	fctx, finish, err := f.l.startWrite(ctx)
	if err != nil {
		return &driver.OpError{Driver: "lease", Op: op, Key: full, Cond: cond, Err: fmt.Errorf("refused to start: %w", err)}
	}
	defer finish()
	err = do(fctx, full)
	if err != nil && ctx.Err() == nil && fctx.Err() != nil && !answered(err) {
		return cutOff(op, full, cond, context.Cause(fctx), err)
	}
	return err
}

// answered reports whether err settles a write's outcome although the fence
// cut its context: the service refused it, or nothing was sent.
func answered(err error) bool {
	for _, known := range []error{driver.ErrPrecondition, driver.ErrPermission, driver.ErrInvalidKey, driver.ErrInvalidMetadata,
		driver.ErrUnsupported, driver.ErrRateLimited, driver.ErrBucketNotExist, driver.ErrNotExist} {
		if errors.Is(err, known) {
			return true
		}
	}
	return !errors.Is(err, driver.ErrOutcomeUnknown) && (errors.Is(err, ErrFenced) || errors.Is(err, ErrLost) || errors.Is(err, ErrReleased))
}

// cutOff is the error of a write the fence cancelled in flight: it may be
// stored, so it is ErrOutcomeUnknown, never a bare cancellation (read as
// "not written").
func cutOff(op, key string, cond driver.Condition, why, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		err = errors.New(err.Error()) // its words, not its meaning
	}
	return &driver.OpError{Driver: "lease", Op: op, Key: key, Cond: cond, Kind: driver.ErrOutcomeUnknown,
		Err: fmt.Errorf("cancelled in flight when the lease ended (%w); the request may have reached the service, so the object may be stored: "+
			"read it back, and do not restore from it if admin.Status.Late finds it late: %w", why, err)}
}

// startWrite admits one write, or refuses it once MayWrite is false. Check
// and count are one step under l.mu, so Release, which waits for counted
// writes (finish), never misses one. The context ends with the lease.
func (l *Lease) startWrite(ctx context.Context) (context.Context, func(), error) {
	l.mu.Lock()
	if err := l.refusalLocked(); err != nil {
		l.mu.Unlock()
		return nil, nil, err
	}
	l.writes++
	l.mu.Unlock()
	fctx, cancel := l.Fence(ctx)
	return fctx, func() {
		cancel()
		l.mu.Lock()
		defer l.mu.Unlock()
		l.writes--
		if l.writes == 0 && l.idle != nil {
			close(l.idle)
			l.idle = nil
		}
	}, nil
}

// refusalLocked is why a write may not start now, or nil; l.mu is held.
func (l *Lease) refusalLocked() error {
	if l.mayWriteLocked() {
		return nil
	}
	if l.done != nil {
		return l.done
	}
	return ErrFenced
}

// waitWrites waits until every write through Bucket has returned, or ctx
// ends.
func (l *Lease) waitWrites(ctx context.Context) error {
	l.mu.Lock()
	if l.writes == 0 {
		l.mu.Unlock()
		return nil
	}
	if l.idle == nil {
		l.idle = make(chan struct{})
	}
	idle, n := l.idle, l.writes
	l.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: %d write(s) through Lease.Bucket, cancelled when the lease ended, had not returned when the release's context ended (%w)",
			ErrWritesInFlight, n, context.Cause(ctx))
	}
}

// stamped adds the lease's stamp to opts' metadata where the driver keeps it.
func (f fencedBucket) stamped(opts driver.PutOptions) driver.PutOptions {
	if !f.l.caps.Metadata {
		return opts
	}
	opts.Metadata = f.l.withStamp(opts.Metadata)
	return opts
}

// Put writes under the fence (see Bucket), stamped (see Stamp).
func (f fencedBucket) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	var a driver.Attrs
	opts = f.stamped(opts)
	err := f.guard(ctx, "put", key, opts.If, func(ctx context.Context, full string) error {
		var err error
		a, err = f.l.b.Put(ctx, full, data, opts)
		return err
	})
	return a, err
}

// PutStream streams under the fence: no part or commit starts once MayWrite
// is false (MayStart), and a request in flight is cancelled when the lease
// ends, after which the driver aborts the upload. Stamped like Put.
func (f fencedBucket) PutStream(ctx context.Context, key string, r io.Reader, opts driver.PutOptions, s *driver.StreamOptions) (driver.Attrs, error) {
	var a driver.Attrs
	opts = f.stamped(opts)
	err := f.guard(ctx, "put", key, opts.If, func(ctx context.Context, full string) error {
		o := driver.StreamOptions{}
		if s != nil {
			o = *s
		}
		userGate := o.MayStart
		o.MayStart = func() error {
			f.l.mu.Lock()
			err := f.l.refusalLocked()
			f.l.mu.Unlock()
			if err != nil {
				return err
			}
			if userGate != nil {
				return userGate()
			}
			return nil
		}
		if opts.If != (driver.Condition{}) {
			if err := f.l.proveStreamCommit(ctx, opts.Metadata); err != nil {
				return err
			}
		}
		var err error
		a, err = f.l.b.PutStream(ctx, full, r, opts, &o)
		return err
	})
	return a, err
}

// proveStreamCommit proves once per lease, on a scratch key, that the service
// applies a streamed write's condition at a multi-part commit (a request a
// proxy may treat unlike a PUT): IfAbsent and If-Match on a made-up version
// over two staged parts must be refused. A driver that cannot stage parts
// sends nothing (ErrUnsupported): its streamed write is one conditional Put.
func (l *Lease) proveStreamCommit(ctx context.Context, md driver.Metadata) error {
	l.mu.Lock()
	proven := l.streamProven
	l.mu.Unlock()
	if proven {
		return nil
	}
	scratch, err := scratchKey(l.key, "stream")
	if err != nil {
		return err
	}
	body := make([]byte, driver.MinPartSize+1)
	opts := &driver.StreamOptions{PartSize: driver.MinPartSize, Concurrency: 1}
	stream := func(cond driver.Condition) (driver.Attrs, error) {
		return l.b.PutStream(ctx, scratch, bytes.NewReader(body), driver.PutOptions{If: cond, Metadata: md}, opts)
	}
	whole := false // the driver cannot stage parts: nothing was written
	// Deleted within cleanupTimeout even if ctx is cancelled.
	defer func() {
		if !whole {
			_ = deleteScratch(ctx, l.b, l.pace, scratch)
		}
	}()
	a, err := stream(driver.IfAbsent())
	if errors.Is(err, driver.ErrUnsupported) {
		whole = true
		l.mu.Lock()
		l.streamProven = true
		l.mu.Unlock()
		return nil
	}
	if err != nil {
		return fmt.Errorf("prove the condition of a streamed commit on %s: %w", scratch, err)
	}
	for _, c := range []struct {
		name string
		cond driver.Condition
	}{{"If-None-Match: * over an existing object", driver.IfAbsent()}, {"If-Match on a made-up version", driver.IfMatch(objects.FakeVersion(a.Version))}} {
		_, err := stream(c.cond)
		switch {
		case err == nil:
			return fmt.Errorf("%w: the service committed a streamed upload of two parts under %s that it should have refused (on the probe key %s), so a conditional streamed write could overwrite a restore point; "+
				"conditional streamed writes are refused on it: use Put for bodies that fit one request, or a service that honours the condition at the commit",
				ErrPreconditionsIgnored, c.name, scratch)
		case !errors.Is(err, driver.ErrPrecondition):
			return fmt.Errorf("prove the condition of a streamed commit (%s) on %s: %w", c.name, scratch, err)
		}
	}
	l.mu.Lock()
	l.streamProven = true
	l.mu.Unlock()
	return nil
}

func (f fencedBucket) Delete(ctx context.Context, key string, cond driver.Condition) error {
	return f.guard(ctx, "delete", key, cond, func(ctx context.Context, full string) error {
		return f.l.b.Delete(ctx, full, cond)
	})
}

// List yields the objects under prefix, keys relative to the lease's prefix,
// leaving out the lease object and its own scratch keys (deeper look-alikes
// are listed). Listing passes through the fence.
func (f fencedBucket) List(ctx context.Context, prefix string) iter.Seq2[driver.Object, error] {
	base := f.base()
	return func(yield func(driver.Object, error) bool) {
		for o, err := range f.l.b.List(ctx, base+prefix) {
			if err != nil {
				yield(o, err)
				return
			}
			if o.Key == f.l.key || !strings.HasPrefix(o.Key, base) || f.l.ownScratch(o.Key) {
				continue
			}
			o.Key = o.Key[len(base):]
			if !yield(o, nil) {
				return
			}
		}
	}
}

// ListPending yields the pending uploads under prefix, relative as List's.
func (f fencedPendingBucket) ListPending(ctx context.Context, prefix string) iter.Seq2[multipart.Pending, error] {
	base := f.base()
	return func(yield func(multipart.Pending, error) bool) {
		for p, err := range f.l.b.(multipart.PendingLister).ListPending(ctx, base+prefix) {
			if err == nil && !strings.HasPrefix(p.Key, base) {
				continue
			}
			p.Key = strings.TrimPrefix(p.Key, base)
			if !yield(p, err) || err != nil {
				return
			}
		}
	}
}

// Close does nothing: the bucket is its caller's to close after Release.
func (f fencedBucket) Close() error { return nil }

// base is the lease's prefix with a slash, or "" for a whole bucket.
func (f fencedBucket) base() string {
	if f.l.prefix == "" {
		return ""
	}
	return f.l.prefix + "/"
}

// withStamp returns a copy of md with the lease's stamp, which replaces any
// caller keys of the same names.
func (l *Lease) withStamp(md driver.Metadata) driver.Metadata {
	out := maps.Clone(md)
	if out == nil {
		out = driver.Metadata{}
	}
	maps.Copy(out, l.stamp.Metadata())
	return out
}
