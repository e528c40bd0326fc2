package faulty

import (
	"context"
	"io"

	"github.com/mushroomdb/bucketlease/driver"
)

// NoServiceTime returns b as a driver without the service-time capability:
// its callers get no driver.ServiceTime, so the lease judges records on the
// machines' clocks alone ("clocks: assumed synchronised"). Checks that run
// the lease on fake clocks far from a real service's (a takeover a TTL
// later, without waiting a TTL) use it; b keeps its optional interfaces.
func NoServiceTime(b driver.Bucket) driver.Bucket { return driver.Wrap(noServiceTime{Bucket: b}, b) }

// OnFakeClocks returns b for a lease on fake clocks that move a TTL on
// without waiting one: without the service's time (NoServiceTime), and
// declaring no KeyWriteInterval, so that the lease does not wait between
// its writes on a clock that never moves by itself. Against a service that
// really limits writes per key (R2, Cloud Storage) such a lease gets the
// service's 429s, and its retries wait on the fake clock: run those checks
// on the system clock there.
func OnFakeClocks(b driver.Bucket) driver.Bucket {
	return driver.Wrap(noServiceTime{Bucket: b, unpaced: true}, b)
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

func (n noServiceTime) Get(ctx context.Context, key string) (io.ReadCloser, driver.Version, error) {
	return n.Bucket.Get(hide(ctx), key)
}

func (n noServiceTime) Put(ctx context.Context, key string, data []byte, cond driver.Condition) (driver.Version, error) {
	return n.Bucket.Put(hide(ctx), key, data, cond)
}

func (n noServiceTime) Delete(ctx context.Context, key string, cond driver.Condition) error {
	return n.Bucket.Delete(hide(ctx), key, cond)
}

// hide returns ctx with no callback for the service's time.
func hide(ctx context.Context) context.Context { return driver.WithServiceTime(ctx, nil) }
