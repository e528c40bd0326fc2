package bounded

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/multipart"
	"github.com/mushroomdb/bucketlease/internal/location"
)

// bucket bounds every request to a bucket: a service that accepts
// a connection and never answers (a dead proxy, a black-holed route) ends
// in an error that names the URL (redacted) and the request, instead of a
// hang. A Get's bound covers reading its body too.
type bucket struct {
	driver.Bucket // PutStream, List and Capabilities pass through unbounded
	d             time.Duration
	url           string // as it may be printed
	bound         string // where d comes from, for the message: "--timeout", "a third of the TTL"
}

// New wraps b so that each Get, Put and Delete gets at most d,
// naming the URL as loc prints it (redacted); d <= 0 returns b itself.
// PutStream and List pass through unbounded: a streamed write takes as
// long as its body does (the fence bounds each part instead), and a
// listing is bounded by its caller. The result is an io.Closer that
// closes b, and a multipart.PendingLister exactly where b is one.
func New(b driver.Bucket, d time.Duration, loc *location.Location, bound string) driver.Bucket {
	if d <= 0 {
		return b
	}
	t := &bucket{Bucket: b, d: d, url: loc.String(), bound: bound}
	if pl, ok := b.(multipart.PendingLister); ok {
		return &pendingBucket{bucket: t, PendingLister: pl}
	}
	return t
}

// pendingBucket is the bucket of a driver that lists its
// pending uploads, which it passes on unbounded.
type pendingBucket struct {
	*bucket
	multipart.PendingLister
}

// Close closes the wrapped bucket (driver.Close).
func (t *bucket) Close() error { return location.Close(t.Bucket) }

// explainHang names what was waited for when err came from the request's
// own deadline rather than the caller's.
func (t *bucket) explainHang(ctx, rctx context.Context, what string, err error) error {
	if err == nil || ctx.Err() != nil || !errors.Is(rctx.Err(), context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("no reply from %s within %v (%s) to %s: the service, or something on the way, did not answer; check the endpoint and the network: %w",
		t.url, t.d, t.bound, what, err)
}

// Get implements driver.Bucket.
func (t *bucket) Get(ctx context.Context, key string, opts driver.GetOptions) (io.ReadCloser, driver.Attrs, error) {
	rctx, cancel := context.WithTimeout(ctx, t.d)
	rc, a, err := t.Bucket.Get(rctx, key, opts)
	if err != nil {
		err = t.explainHang(ctx, rctx, "a read (GET) of "+key, err)
		cancel()
		return nil, a, err
	}
	return &cancelOnClose{ReadCloser: rc, cancel: cancel}, a, nil
}

// Put implements driver.Bucket.
func (t *bucket) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	rctx, cancel := context.WithTimeout(ctx, t.d)
	defer cancel()
	a, err := t.Bucket.Put(rctx, key, data, opts)
	return a, t.explainHang(ctx, rctx, "a write (PUT) of "+key, err)
}

// Delete implements driver.Bucket.
func (t *bucket) Delete(ctx context.Context, key string, cond driver.Condition) error {
	rctx, cancel := context.WithTimeout(ctx, t.d)
	defer cancel()
	return t.explainHang(ctx, rctx, "a DELETE of "+key, t.Bucket.Delete(rctx, key, cond))
}

// cancelOnClose ends a Get's deadline once its body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
	once   sync.Once
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.once.Do(c.cancel)
	return err
}
