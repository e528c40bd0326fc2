package lease_test

import (
	"context"
	"testing"

	"github.com/mushroomdb/bucketlease/clock"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/internal/testsupport/wrapcheck"
	"github.com/mushroomdb/bucketlease/lease"
)

// TestBucketKeepsAbilities: Lease.Bucket has the optional interfaces of the
// bucket the lease was given, under EnvConditional=off (through
// besteffort) too, and each reaches that bucket, but for Close, which
// leaves it open for the lease.
func TestBucketKeepsAbilities(t *testing.T) {
	for _, conditional := range []string{"on", "off"} {
		wrapcheck.Check(t, "fencedBucket", func(t *testing.T, in driver.Bucket) driver.Bucket {
			o := opts("a", clock.System{}, nil) // the service time the inner mem bucket reports is real time
			o.Seams().Getenv = func(k string) string {
				if k == lease.EnvConditional {
					return conditional
				}
				return ""
			}
			l, err := lease.Acquire(context.Background(), in, "db1", o)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = l.Release(context.Background()) })
			return l.Bucket()
		}, wrapcheck.CloseStaysOpen("the lease's bucket is its caller's, and the lease uses it until Release"))
	}
}
