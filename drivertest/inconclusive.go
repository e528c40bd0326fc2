package drivertest

import (
	"context"
	"errors"
	"io"
	"iter"
	"sync"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/multipart"
	"github.com/mushroomdb/bucketlease/internal/location"
	"github.com/mushroomdb/bucketlease/internal/objects"
)

// recorder notes the first error a check's operations meet that shows
// nothing about preconditions (a reset connection, a 5xx, a missing bucket,
// refused credentials), so its failure is reported inconclusive.
type recorder struct {
	driver.Bucket
	mu  sync.Mutex
	err error
}

// recorded returns b through a new recorder (keeping ListPending and Close).
func recorded(b driver.Bucket) (driver.Bucket, *recorder) {
	rec := &recorder{Bucket: b}
	if _, ok := b.(multipart.PendingLister); ok {
		return pendingRecorder{rec}, rec
	}
	return rec, rec
}

// expected are errors a conforming service gives, and the checks' own cancellations.
var expected = []error{driver.ErrPrecondition, driver.ErrNotExist, driver.ErrUnsupported, driver.ErrInvalidKey, driver.ErrInvalidMetadata,
	driver.ErrOutcomeUnknown, objects.ErrTooLarge, context.Canceled, context.DeadlineExceeded}

// note records err if no conforming service would have given it.
func (r *recorder) note(err error) {
	if err == nil || err == io.EOF {
		return
	}
	for _, e := range expected {
		if errors.Is(err, e) {
			return
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = err
	}
}

func (r *recorder) failure() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

func (r *recorder) Get(ctx context.Context, key string, opts driver.GetOptions) (io.ReadCloser, driver.Attrs, error) {
	rc, a, err := r.Bucket.Get(ctx, key, opts)
	r.note(err)
	if err != nil {
		return rc, a, err
	}
	return &recordedBody{ReadCloser: rc, r: r}, a, nil
}

func (r *recorder) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	a, err := r.Bucket.Put(ctx, key, data, opts)
	r.note(err)
	return a, err
}

func (r *recorder) Delete(ctx context.Context, key string, cond driver.Condition) error {
	err := r.Bucket.Delete(ctx, key, cond)
	r.note(err)
	return err
}

// recordedBody notes a body that ends in an error (unexpected EOF, say).
type recordedBody struct {
	io.ReadCloser
	r *recorder
}

func (b *recordedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.r.note(err)
	return n, err
}

// PutStream streams through the driver, noting the error.
func (r *recorder) PutStream(ctx context.Context, key string, body io.Reader, opts driver.PutOptions, s *driver.StreamOptions) (driver.Attrs, error) {
	a, err := r.Bucket.PutStream(ctx, key, body, opts, s)
	if fb, ok := body.(*failingBody); ok && fb.failed(err) {
		// The failure the check made its body return, not the service's.
		return a, err
	}
	r.note(err)
	return a, err
}

// List lists through the driver, noting the error.
func (r *recorder) List(ctx context.Context, prefix string) iter.Seq2[driver.Object, error] {
	return func(yield func(driver.Object, error) bool) {
		for o, err := range r.Bucket.List(ctx, prefix) {
			r.note(err)
			if !yield(o, err) {
				return
			}
		}
	}
}

// Close closes the driver (bucket.Bucket.Close).
func (r *recorder) Close() error { return location.Close(r.Bucket) }

// pendingRecorder is the recorder of a multipart.PendingLister.
type pendingRecorder struct{ *recorder }

// ListPending lists the driver's pending uploads, noting the error.
func (r pendingRecorder) ListPending(ctx context.Context, prefix string) iter.Seq2[multipart.Pending, error] {
	return func(yield func(multipart.Pending, error) bool) {
		for p, err := range r.Bucket.(multipart.PendingLister).ListPending(ctx, prefix) {
			r.note(err)
			if !yield(p, err) {
				return
			}
		}
	}
}
