package driver_test

import (
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/besteffort"
	"github.com/mushroomdb/bucketlease/driver/mem"
)

// reports collects what a driver reports under WithServiceTime.
type reports struct {
	mu  sync.Mutex
	got []driver.ServiceTime
}

func (r *reports) ctx(ctx context.Context) context.Context {
	return driver.WithServiceTime(ctx, func(t driver.ServiceTime) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.got = append(r.got, t)
	})
}

// last returns the last report and how many came, and forgets them.
func (r *reports) last() (driver.ServiceTime, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(r.got)
	if n == 0 {
		return driver.ServiceTime{}, 0
	}
	t := r.got[n-1]
	r.got = nil
	return t, n
}

// passThrough is a wrapper that overrides nothing but must pass its
// context on, as every wrapper of the module does.
type passThrough struct{ driver.Bucket }

func TestReportServiceTimeNeedsACallbackAndADate(t *testing.T) {
	driver.ReportServiceTime(context.Background(), driver.ServiceTime{Date: time.Now()}) // no callback: nothing happens
	var r reports
	ctx := r.ctx(context.Background())
	driver.ReportServiceTime(ctx, driver.ServiceTime{Modified: time.Now()})
	if _, n := r.last(); n != 0 {
		t.Errorf("a report without a Date reached the callback %d times", n)
	}
	date := time.Date(2026, 12, 4, 21, 0, 0, 0, time.UTC)
	driver.ReportServiceTime(ctx, driver.ServiceTime{Date: date, Resolution: time.Second})
	if got, n := r.last(); n != 1 || !got.Date.Equal(date) || got.Resolution != time.Second {
		t.Errorf("got %+v (%d reports), want the Date %v with a resolution of 1s", got, n, date)
	}
}

// TestServiceTimeThroughWrappers: the report of the driver underneath
// reaches the caller through driver.Wrap and besteffort, with the clock of
// the service (mem's Now) and, for a Get, the object's modification time;
// besteffort's Put, which reads before it writes, reports no modification
// time.
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
		{"Wrap", func(b driver.Bucket) driver.Bucket { return driver.Wrap(passThrough{b}, b) }},
		{"besteffort", besteffort.Wrap},
		{"Wrap(besteffort)", func(b driver.Bucket) driver.Bucket {
			be := besteffort.Wrap(b)
			return driver.Wrap(passThrough{be}, be)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.wrap(&mem.Bucket{Now: clock})
			var r reports
			ctx := r.ctx(t.Context())

			v, err := b.Put(ctx, "k", []byte("one"), driver.IfAbsent())
			if err != nil {
				t.Fatal(err)
			}
			put, n := r.last()
			if n == 0 || put.Date.IsZero() {
				t.Fatalf("Put: no report reached the caller")
			}
			if !put.Modified.IsZero() {
				t.Errorf("Put reported the modification time %v; a Put's report has none", put.Modified)
			}

			rc, _, err := b.Get(ctx, "k")
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, rc)
			rc.Close()
			get, n := r.last()
			if n == 0 || !get.Date.After(put.Date) {
				t.Fatalf("Get: got %+v (%d reports), want a Date after the Put's %v", get, n, put.Date)
			}
			if get.Modified.IsZero() || get.Modified.After(get.Date) || get.Modified.Before(put.Date) {
				t.Errorf("Get reported the object modified at %v, want it between the Put's Date %v and the Get's %v",
					get.Modified, put.Date, get.Date)
			}

			if _, err := b.Put(ctx, "k", []byte("two"), driver.IfMatch(driver.FakeVersion(v))); err == nil {
				t.Fatal("a Put of a made-up version succeeded")
			}
			refused, n := r.last()
			if n == 0 || !refused.Date.After(get.Date) {
				t.Errorf("a refused Put: got %+v (%d reports), want a Date after the Get's %v", refused, n, get.Date)
			}
			if !refused.Modified.IsZero() {
				t.Errorf("a refused Put reported the modification time %v; a Put's report has none", refused.Modified)
			}
		})
	}
}
