package driver_test

import (
	"io"
	"sync"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/besteffort"
	"github.com/mushroomdb/bucketlease/driver/mem"
	"github.com/mushroomdb/bucketlease/internal/objects"
)

// passThrough is a wrapper that overrides nothing, as a wrapper that
// embeds driver.Bucket does for every method it leaves alone.
type passThrough struct{ driver.Bucket }

// TestServiceTimeThroughWrappers: the time the driver underneath returns
// reaches the caller in Attrs.Time through a wrapper that embeds the
// Bucket and through besteffort, with the clock of the service (mem's Now)
// and, for a Get, the object's modification time; a Put's time, a refused
// Put's included, has no modification time (besteffort's Put reads before
// it writes).
func TestServiceTimeThroughWrappers(t *testing.T) {
	now := time.Date(2026, 12, 4, 21, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Second)
		return now
	}
	for _, tc := range []struct {
		name string
		wrap func(driver.Bucket) driver.Bucket
	}{
		{"embedding", func(b driver.Bucket) driver.Bucket { return passThrough{b} }},
		{"besteffort", besteffort.Wrap},
		{"embedding(besteffort)", func(b driver.Bucket) driver.Bucket { return passThrough{besteffort.Wrap(b)} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.wrap(&mem.Bucket{Now: clock})
			ctx := t.Context()

			pa, err := b.Put(ctx, "k", []byte("one"), driver.PutOptions{If: driver.IfAbsent()})
			if err != nil {
				t.Fatal(err)
			}
			put := pa.Time
			if put.Date.IsZero() {
				t.Fatalf("Put: no service time reached the caller")
			}
			if !put.Modified.IsZero() {
				t.Errorf("Put returned the modification time %v; a Put's time has none", put.Modified)
			}

			rc, ga, err := b.Get(ctx, "k", driver.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, rc)
			rc.Close()
			get := ga.Time
			if !get.Date.After(put.Date) {
				t.Fatalf("Get: got %+v, want a Date after the Put's %v", get, put.Date)
			}
			if get.Modified.IsZero() || get.Modified.After(get.Date) || get.Modified.Before(put.Date) {
				t.Errorf("Get returned the object modified at %v, want it between the Put's Date %v and the Get's %v",
					get.Modified, put.Date, get.Date)
			}

			ra, err := b.Put(ctx, "k", []byte("two"), driver.PutOptions{If: driver.IfMatch(objects.FakeVersion(pa.Version))})
			if err == nil {
				t.Fatal("a Put of a made-up version succeeded")
			}
			refused := ra.Time
			if !refused.Date.After(get.Date) {
				t.Errorf("a refused Put: got %+v, want a Date after the Get's %v", refused, get.Date)
			}
			if !refused.Modified.IsZero() {
				t.Errorf("a refused Put returned the modification time %v; a Put's time has none", refused.Modified)
			}
		})
	}
}
