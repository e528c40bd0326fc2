package drivertest

import (
	"context"
	"errors"
	"io"
	"iter"
	"sync"

	"github.com/mushroomdb/bucketlease/driver"
)

// A check that fails because an operation could not complete (a reset
// connection, a body cut short, a 5xx, a missing bucket, refused
// credentials) has shown nothing about preconditions. recorder notes the
// first such error a check's operations meet, so that its failure is
// reported as inconclusive (Result.Errored) rather than as evidence that
// the service ignores preconditions.
type recorder struct {
	driver.Bucket
	mu  sync.Mutex
	err error
}

// recorded returns b through a new recorder, with b's optional
// interfaces (driver.Wrap), and the recorder.
func recorded(b driver.Bucket) (driver.Bucket, *recorder) {
	rec := &recorder{Bucket: b}
	return driver.Wrap(rec, b), rec
}

// expected are the errors a conforming service gives the checks, and the
// cancellations the checks make themselves.
var expected = []error{driver.ErrPrecondition, driver.ErrNotExist, driver.ErrUnsupported, driver.ErrInvalidKey, driver.ErrInvalidMetadata,
	driver.ErrOutcomeUnknown, driver.ErrTooLarge, context.Canceled, context.DeadlineExceeded}

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

func (r *recorder) Get(ctx context.Context, key string) (io.ReadCloser, driver.Version, error) {
	rc, v, err := r.Bucket.Get(ctx, key)
	r.note(err)
	if err != nil {
		return rc, v, err
	}
	return &recordedBody{ReadCloser: rc, r: r}, v, nil
}

func (r *recorder) Put(ctx context.Context, key string, data []byte, cond driver.Condition) (driver.Version, error) {
	v, err := r.Bucket.Put(ctx, key, data, cond)
	r.note(err)
	return v, err
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

// PutStream streams through the driver's Streamer (driver.PutStream),
// noting the error.
func (r *recorder) PutStream(ctx context.Context, key string, body io.Reader, cond driver.Condition, opts *driver.StreamOptions) (driver.Version, error) {
	v, err := driver.PutStream(ctx, r.Bucket, key, body, cond, opts)
	if fb, ok := body.(*failingBody); ok && fb.failed(err) {
		// The failure the check made its body return, not the service's.
		return v, err
	}
	r.note(err)
	return v, err
}

// List lists through the driver's Lister (driver.List), noting the error.
func (r *recorder) List(ctx context.Context, prefix string) iter.Seq2[driver.Object, error] {
	return func(yield func(driver.Object, error) bool) {
		for o, err := range driver.List(ctx, r.Bucket, prefix) {
			r.note(err)
			if !yield(o, err) {
				return
			}
		}
	}
}

// ListPending lists the driver's pending uploads, noting the error. It is
// called only where the driver is a PendingLister: the scope's bucket is
// the recorder wrapped with driver.Wrap, which keeps exactly the driver's
// optional interfaces.
func (r *recorder) ListPending(ctx context.Context, prefix string) iter.Seq2[driver.Pending, error] {
	return func(yield func(driver.Pending, error) bool) {
		for p, err := range r.Bucket.(driver.PendingLister).ListPending(ctx, prefix) {
			r.note(err)
			if !yield(p, err) {
				return
			}
		}
	}
}
