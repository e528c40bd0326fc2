package faulty

import (
	"context"
	"io"
	"iter"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/multipart"
	"github.com/mushroomdb/bucketlease/internal/location"
)

// NoServiceTime returns b without the service-time capability: its Attrs
// carry a zero Time, so the lease judges records on the machines' clocks
// alone. It is a multipart.PendingLister where b is one, and closes b.
func NoServiceTime(b driver.Bucket) driver.Bucket { return hideTime(noServiceTime{Bucket: b}) }

// OnFakeClocks returns b for a lease on fake clocks: NoServiceTime, and
// declaring no KeyWriteInterval so the lease does not pace writes on a
// clock that never moves. Against a service that limits writes per key,
// run on the system clock instead.
func OnFakeClocks(b driver.Bucket) driver.Bucket {
	return hideTime(noServiceTime{Bucket: b, unpaced: true})
}

// hideTime returns n, with ListPending where its bucket has it.
func hideTime(n noServiceTime) driver.Bucket {
	if _, ok := n.Bucket.(multipart.PendingLister); ok {
		return noServiceTimePending{n}
	}
	return n
}

type noServiceTime struct {
	driver.Bucket
	unpaced bool // declares no KeyWriteInterval
}

func (n noServiceTime) Capabilities() driver.Capabilities {
	c := n.Bucket.Capabilities()
	if n.unpaced {
		c.KeyWriteInterval = 0
	}
	return c
}

func (n noServiceTime) Get(ctx context.Context, key string, opts driver.GetOptions) (io.ReadCloser, driver.Attrs, error) {
	rc, a, err := n.Bucket.Get(ctx, key, opts)
	a.Time = driver.ServiceTime{}
	return rc, a, err
}

func (n noServiceTime) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	a, err := n.Bucket.Put(ctx, key, data, opts)
	a.Time = driver.ServiceTime{}
	return a, err
}

func (n noServiceTime) PutStream(ctx context.Context, key string, r io.Reader, opts driver.PutOptions, s *driver.StreamOptions) (driver.Attrs, error) {
	a, err := n.Bucket.PutStream(ctx, key, r, opts, s)
	a.Time = driver.ServiceTime{}
	return a, err
}

// Close closes the bucket under it.
func (n noServiceTime) Close() error { return location.Close(n.Bucket) }

// noServiceTimePending is a noServiceTime over a multipart.PendingLister.
type noServiceTimePending struct{ noServiceTime }

func (n noServiceTimePending) ListPending(ctx context.Context, prefix string) iter.Seq2[multipart.Pending, error] {
	return n.Bucket.(multipart.PendingLister).ListPending(ctx, prefix)
}
