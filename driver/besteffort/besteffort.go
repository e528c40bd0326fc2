// Package besteffort runs the lease on a service whose conditional writes
// cannot be trusted, by emulating each precondition with a read followed by
// an unconditional write.
//
// MUSHROOMDB_BACKUP_LEASE_CONDITIONAL=off selects it. It catches a second
// machine starting while the first runs, but not a race: two writers that
// read before either writes both pass, and the later write wins. Its
// Capabilities declare BestEffort.
package besteffort

import (
	"context"
	"errors"
	"io"
	"iter"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/multipart"
	"github.com/mushroomdb/bucketlease/internal/location"
)

// bucket wraps a bucket, emulating preconditions. Get and List are the
// wrapped bucket's.
type bucket struct {
	driver.Bucket
}

// pendingBucket is bucket over a multipart.PendingLister.
type pendingBucket struct {
	*bucket
	pl multipart.PendingLister
}

// Wrap returns b with every precondition emulated by a read. The result
// is a multipart.PendingLister if b is one, and an io.Closer that closes b;
// its Unwrap method returns b.
func Wrap(b driver.Bucket) driver.Bucket {
	w := &bucket{Bucket: b}
	if pl, ok := b.(multipart.PendingLister); ok {
		return &pendingBucket{bucket: w, pl: pl}
	}
	return w
}

// Unwrap returns the wrapped bucket.
func (b *bucket) Unwrap() driver.Bucket { return b.Bucket }

// Close closes the wrapped bucket (bucket.Bucket.Close).
func (b *bucket) Close() error { return location.Close(b.Bucket) }

// ListPending yields the wrapped bucket's pending uploads.
func (b *pendingBucket) ListPending(ctx context.Context, prefix string) iter.Seq2[multipart.Pending, error] {
	return b.pl.ListPending(ctx, prefix)
}

// Capabilities declares BestEffort exclusion, a best-effort conditional
// Delete, and the wrapped bucket's metadata.
func (b *bucket) Capabilities() driver.Capabilities {
	in := b.Bucket.Capabilities()
	return driver.Capabilities{Exclusion: driver.BestEffort, ConditionalDelete: true,
		Metadata: in.Metadata, ListMetadata: in.ListMetadata}
}

// check reads key's current version and tests cond against it, returning
// the read's service time without a modification time.
func (b *bucket) check(ctx context.Context, op *driver.Op, key string, cond driver.Condition) (driver.ServiceTime, error) {
	if cond == (driver.Condition{}) {
		return driver.ServiceTime{}, nil
	}
	rc, cur, err := b.Bucket.Get(ctx, key, driver.GetOptions{})
	t := cur.Time
	t.Modified = time.Time{}
	exists := err == nil
	if exists {
		rc.Close()
	} else if !errors.Is(err, driver.ErrNotExist) {
		return t, err
	}
	ok := !exists
	if v, isMatch := cond.Match(); isMatch {
		ok = exists && cur.Version == v
	}
	if !ok {
		return t, op.Fail(driver.ErrPrecondition, nil)
	}
	return t, nil
}

// Put checks opts.If by reading, then writes unconditionally with
// opts.Metadata. Its Attrs' Time is the write's, or the read's where the
// write got no answer or was not sent.
func (b *bucket) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	op, err := driver.BeginPut(ctx, b.Capabilities(), "besteffort", key, opts)
	if err != nil {
		return driver.Attrs{}, err
	}
	t, err := b.check(ctx, op, key, opts.If)
	if err != nil {
		return driver.Attrs{Time: t}, err
	}
	a, err := b.Bucket.Put(ctx, key, data, driver.PutOptions{Metadata: op.Metadata})
	if a.Time.Date.IsZero() {
		a.Time = t
	}
	return a, err
}

// Delete checks cond by reading, then deletes unconditionally.
func (b *bucket) Delete(ctx context.Context, key string, cond driver.Condition) error {
	op, err := driver.BeginDelete(ctx, b.Capabilities(), "besteffort", key, cond)
	if err != nil {
		return err
	}
	if _, err := b.check(ctx, op, key, cond); err != nil {
		return err
	}
	return b.Bucket.Delete(ctx, key, driver.Condition{})
}

// PutStream checks opts.If by reading before it starts and before each
// part and the commit, then streams the body unconditionally: a writer
// that commits between the last check and the commit is overwritten.
func (b *bucket) PutStream(ctx context.Context, key string, r io.Reader, opts driver.PutOptions, s *driver.StreamOptions) (driver.Attrs, error) {
	op, err := driver.BeginPut(ctx, b.Capabilities(), "besteffort", key, opts)
	if err != nil {
		return driver.Attrs{}, err
	}
	if _, err := b.check(ctx, op, key, opts.If); err != nil {
		var oe *driver.OpError
		if errors.As(err, &oe) && oe.Err == nil {
			oe.Err = &multipart.UploadError{Err: errors.New("the condition did not hold when the write started")}
		}
		return driver.Attrs{}, err
	}
	inner := copyOpts(s)
	gate := inner.MayStart
	inner.MayStart = func() error {
		if gate != nil {
			if err := gate(); err != nil {
				return err
			}
		}
		_, err := b.check(ctx, op, key, opts.If)
		return err
	}
	return b.Bucket.PutStream(ctx, key, r, driver.PutOptions{Metadata: op.Metadata}, &inner)
}

// copyOpts returns a copy of *o, or the zero StreamOptions for nil.
func copyOpts(o *driver.StreamOptions) driver.StreamOptions {
	if o == nil {
		return driver.StreamOptions{}
	}
	return *o
}
