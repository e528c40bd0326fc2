// Package besteffort runs the lease on a service whose conditional writes
// cannot be trusted, by emulating each precondition with a read followed by
// an unconditional write.
//
// It is what MUSHROOMDB_BACKUP_LEASE_CONDITIONAL=off selects. It catches the
// common case (a second machine that starts while the first is running) but
// not a race: two writers that read before either writes both pass, and the
// later write wins. Its Capabilities say so, declaring BestEffort, and the
// lease logs it at WARN.
//
// The wrapped bucket's optional abilities (driver.Streamer, driver.Lister,
// driver.PendingLister, io.Closer) are kept, no more and no fewer
// (driver.Wrap): a streamed write is checked as Put is, and listing and
// closing pass through.
package besteffort

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
)

// bucket wraps a bucket, emulating preconditions.
type bucket struct {
	inner driver.Bucket
}

// Wrap returns b with every precondition emulated by a read. The result
// implements the optional interfaces b implements, and its Unwrap method
// returns b.
func Wrap(b driver.Bucket) driver.Bucket { return driver.Wrap(&bucket{inner: b}, b) }

// Capabilities declares BestEffort exclusion and a (best-effort)
// conditional Delete, and the wrapped bucket's metadata (Metadata,
// ListMetadata): writes and reads pass their context, and so the metadata
// of driver.WithMetadata, through to it.
func (b *bucket) Capabilities() driver.Capabilities {
	in := b.inner.Capabilities()
	return driver.Capabilities{Exclusion: driver.BestEffort, ConditionalDelete: true,
		Metadata: in.Metadata, ListMetadata: in.ListMetadata}
}

// Get reads through.
func (b *bucket) Get(ctx context.Context, key string) (io.ReadCloser, driver.Version, error) {
	return b.inner.Get(ctx, key)
}

// check reads key's current version and tests cond against it.
func (b *bucket) check(ctx context.Context, op *driver.Op, key string, cond driver.Condition) error {
	if cond.Unconditional() {
		return nil
	}
	rc, cur, err := b.inner.Get(asPut(ctx), key)
	exists := err == nil
	if exists {
		rc.Close()
	} else if !errors.Is(err, driver.ErrNotExist) {
		return err
	}
	ok := !exists
	if v, isMatch := cond.Match(); isMatch {
		ok = exists && cur == v
	}
	if !ok {
		return op.Fail(driver.ErrPrecondition, nil)
	}
	return nil
}

// asPut returns ctx under which the service time the wrapped bucket
// reports (driver.WithServiceTime) for check's Get reaches ctx's callback
// without the object's modification time: the caller made a Put or a
// Delete, whose report has none. The Get's metadata
// (driver.WithMetadataReport) is not reported.
func asPut(ctx context.Context) context.Context {
	ctx = driver.WithMetadataReport(ctx, nil) // the read object's metadata is not the caller's
	return driver.WithServiceTime(ctx, func(t driver.ServiceTime) {
		t.Modified = time.Time{}
		driver.ReportServiceTime(ctx, t)
	})
}

// Put checks cond by reading, then writes unconditionally.
func (b *bucket) Put(ctx context.Context, key string, data []byte, cond driver.Condition) (driver.Version, error) {
	op, err := driver.Begin(ctx, b.Capabilities(), "besteffort", driver.OpPut, key, cond)
	if err != nil {
		return "", err
	}
	if err := b.check(ctx, op, key, cond); err != nil {
		return "", err
	}
	return b.inner.Put(ctx, key, data, driver.Condition{})
}

// Delete checks cond by reading, then deletes unconditionally.
func (b *bucket) Delete(ctx context.Context, key string, cond driver.Condition) error {
	op, err := driver.Begin(ctx, b.Capabilities(), "besteffort", driver.OpDelete, key, cond)
	if err != nil {
		return err
	}
	if err := b.check(ctx, op, key, cond); err != nil {
		return err
	}
	return b.inner.Delete(ctx, key, driver.Condition{})
}

// PutStream checks cond by reading, before it starts and again before each
// part and the commit is started (wrapping opts.MayStart), then streams the
// body through the wrapped bucket unconditionally (driver.PutStream, with
// its fallback). Like Put, it is best effort: a writer that commits between
// the last check and the commit is overwritten.
func (b *bucket) PutStream(ctx context.Context, key string, r io.Reader, cond driver.Condition, opts *driver.StreamOptions) (driver.Version, error) {
	op, err := driver.Begin(ctx, b.Capabilities(), "besteffort", driver.OpPut, key, cond)
	if err != nil {
		return "", err
	}
	if err := b.check(ctx, op, key, cond); err != nil {
		var oe *driver.OpError
		if errors.As(err, &oe) && oe.Err == nil {
			oe.Err = &driver.UploadError{Err: errors.New("the condition did not hold when the write started")}
		}
		return "", err
	}
	inner := copyOpts(opts)
	gate := inner.MayStart
	inner.MayStart = func() error {
		if gate != nil {
			if err := gate(); err != nil {
				return err
			}
		}
		return b.check(ctx, op, key, cond)
	}
	return driver.PutStream(ctx, b.inner, key, r, driver.Condition{}, &inner)
}

// copyOpts returns a copy of *o, or the zero StreamOptions for nil.
func copyOpts(o *driver.StreamOptions) driver.StreamOptions {
	if o == nil {
		return driver.StreamOptions{}
	}
	return *o
}
