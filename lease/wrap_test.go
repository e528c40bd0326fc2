package lease_test

import (
	"context"
	"io"
	"iter"
	"testing"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/clock"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/mem"
	"github.com/mushroomdb/bucketlease/driver/multipart"
	"github.com/mushroomdb/bucketlease/lease"
)

// pendingMem is mem with the optional interfaces mem lacks, counting their
// calls: ListPending (multipart.PendingLister) and Close (io.Closer).
type pendingMem struct {
	*mem.Bucket
	pending, closes *int
}

func (p pendingMem) ListPending(context.Context, string) iter.Seq2[multipart.Pending, error] {
	*p.pending++
	return func(func(multipart.Pending, error) bool) {}
}

func (p pendingMem) Close() error {
	*p.closes++
	return nil
}

// TestBucketKeepsAbilities: Lease.Bucket is a multipart.PendingLister exactly
// where the bucket the lease was given is one, under EnvConditional=off
// (through besteffort) too, and its ListPending reaches that bucket's; it
// is always an io.Closer, whose Close leaves that bucket open, since the
// lease uses it until Release.
func TestBucketKeepsAbilities(t *testing.T) {
	ctx := context.Background()
	for _, conditional := range []string{"on", "off"} {
		for _, lists := range []bool{false, true} {
			var pending, closes int
			var in driver.Bucket = mem.New()
			if lists {
				in = pendingMem{mem.New(), &pending, &closes}
			}
			o := opts("a", clock.System{}, nil) // the service time the inner mem bucket reports is real time
			o.Seams().Getenv = func(k string) string {
				if k == lease.EnvConditional {
					return conditional
				}
				return ""
			}
			l, err := lease.Acquire(ctx, bucket.New(in, "db1"), o)
			if err != nil {
				t.Fatal(err)
			}
			w := l.Bucket().Driver()
			pl, ok := w.(multipart.PendingLister)
			if ok != lists {
				t.Errorf("conditional %s: Lease.Bucket over a bucket that lists pending uploads (%v) is a PendingLister: %v", conditional, lists, ok)
			}
			if ok {
				for _, err := range pl.ListPending(ctx, "") {
					t.Errorf("conditional %s: ListPending: %v", conditional, err)
				}
				if pending != 1 {
					t.Errorf("conditional %s: Lease.Bucket's ListPending reached the inner bucket's %d times, want 1", conditional, pending)
				}
			}
			c, ok := w.(io.Closer)
			if !ok {
				t.Fatalf("conditional %s: Lease.Bucket is not an io.Closer", conditional)
			}
			if err := c.Close(); err != nil || closes != 0 {
				t.Errorf("conditional %s: Lease.Bucket's Close: %v, and it closed the lease's bucket %d times, want none", conditional, err, closes)
			}
			if err := l.Release(ctx); err != nil {
				t.Fatalf("conditional %s: release after closing Lease.Bucket: %v", conditional, err)
			}
		}
	}
}
