package r2_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/r2"
	"github.com/mushroomdb/bucketlease/driver/s3"
	"github.com/mushroomdb/bucketlease/internal/leaseseam"
	"github.com/mushroomdb/bucketlease/internal/testsupport/miniotest"
	"github.com/mushroomdb/bucketlease/internal/testsupport/rateproxy"
	"github.com/mushroomdb/bucketlease/lease"
)

// TestLeaseBehindARateLimitMinIO: the lease on MinIO
// behind a proxy that answers a second write to one key within a second
// with 429 and Retry-After: 1, as R2 does. Through the R2 driver, which
// declares the limit, the acquire spaces its writes to each key and no
// write is refused; through the S3 driver, which declares none, the
// refused writes are sent again after the Retry-After. Either way the
// acquire (create, then a takeover of a released lease), the renewal
// right after it and the release come out as on a service without the
// limit: never a refused probe, a lost lease, ErrPreconditionsIgnored or
// a blocked prefix.
func TestLeaseBehindARateLimitMinIO(t *testing.T) {
	srv := miniotest.Env(t)
	for _, c := range []struct {
		name    string
		open    func(endpoint, bucket string) driver.Bucket
		declare bool
	}{
		{"r2", func(e, bucket string) driver.Bucket { return r2.New(srv.Client(e), bucket) }, true},
		{"s3", func(e, bucket string) driver.Bucket { return s3.New(srv.Client(e), bucket) }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := rateproxy.Start(srv.URL())
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			b := c.open(p.URL(), srv.NewBucket(t))
			if got := b.Capabilities().KeyWriteInterval > 0; got != c.declare {
				t.Fatalf("KeyWriteInterval = %v", b.Capabilities().KeyWriteInterval)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			opts := func(id string) *lease.Options {
				return leaseseam.With(&lease.Options{TTL: 30 * time.Second, InstanceID: id}, leaseseam.Seams{Getenv: func(string) string { return "" }})
			}
			start := time.Now()
			l, err := lease.Acquire(ctx, bucket.New(b, "db1"), opts("a"))
			if err != nil {
				t.Fatalf("acquire a free prefix: %v (%d of %d writes answered 429)", err, p.Limited(), p.Writes())
			}
			t.Logf("acquired in %v; %d of %d writes answered 429", time.Since(start).Round(time.Millisecond), p.Limited(), p.Writes())
			if err := leaseseam.Renew(ctx, l); err != nil {
				t.Fatalf("renew right after the acquire: %v", err)
			}
			if err := l.Release(ctx); err != nil {
				t.Fatalf("release right after the renewal: %v", err)
			}
			start = time.Now()
			l2, err := lease.Acquire(ctx, bucket.New(b, "db1"), opts("b"))
			if err != nil {
				t.Fatalf("take over the released lease: %v (%d of %d writes answered 429)", err, p.Limited(), p.Writes())
			}
			t.Logf("took over in %v; %d of %d writes answered 429", time.Since(start).Round(time.Millisecond), p.Limited(), p.Writes())
			if !l2.MayWrite() {
				t.Fatal("the new lease may not write")
			}
			_, err = lease.Acquire(ctx, bucket.New(b, "db1"), opts("c"))
			if !errors.Is(err, lease.ErrHeld) {
				t.Fatalf("a third instance: %v, want ErrHeld", err)
			}
			if err := l2.Release(ctx); err != nil {
				t.Fatalf("release: %v", err)
			}
			if c.declare && p.Limited() != 0 {
				t.Errorf("%d writes answered 429 where the driver declares the interval: the lease should space them", p.Limited())
			}
			if !c.declare && p.Limited() == 0 {
				t.Error("no write was answered 429: the proxy tested nothing")
			}
		})
	}
}
