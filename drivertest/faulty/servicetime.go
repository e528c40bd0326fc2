package faulty

import (
	"context"
	"io"
	"iter"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/multipart"
	"github.com/mushroomdb/bucketlease/internal/location"
)

// NoServiceTime returns b as a driver without the service-time capability:
// the Attrs of its Get, Put and PutStream carry a zero Time, with an error
// too, so the lease judges records on the machines' clocks alone ("clocks:
// assumed synchronised"). Checks that run the lease on fake clocks far from
// a real service's (a takeover a TTL later, without waiting a TTL) use it.
// The result is a multipart.PendingLister where b is one, and an io.Closer
// that closes b (bucket.Bucket.Close).
func NoServiceTime(b driver.Bucket) driver.Bucket { return hideTime(noServiceTime{Bucket: b}) }

// OnFakeClocks returns b for a lease on fake clocks that move a TTL on
// without waiting one: without the service's time (NoServiceTime), and
// declaring no KeyWriteInterval, so that the lease does not wait between
// its writes on a clock that never moves by itself. Against a service that
// really limits writes per key (R2, Cloud Storage) such a lease gets the
// service's 429s, and its retries wait on the fake clock: run those checks
// on the system clock there.
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
