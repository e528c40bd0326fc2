package faulty_test

import (
	"context"
	"io"
	"testing"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/mem"
	"github.com/mushroomdb/bucketlease/drivertest/faulty"
	"github.com/mushroomdb/bucketlease/internal/objects"
)

// TestNoServiceTimeHidesTheReports: through NoServiceTime, neither Get nor
// Put reports the service's time that the mem bucket under it reports,
// with an error (a missing key, a refused write) or without.
func TestNoServiceTimeHidesTheReports(t *testing.T) {
	ctx := context.Background()
	inner := mem.New()
	for _, tc := range []struct {
		name string
		b    driver.Bucket
		want bool
	}{{"mem", inner, true}, {"NoServiceTime(mem)", faulty.NoServiceTime(inner), false}} {
		k := "k-" + tc.name
		var times []driver.ServiceTime
		a, err := tc.b.Put(ctx, k, []byte("x"), driver.PutOptions{If: driver.IfAbsent()})
		if err != nil {
			t.Fatal(err)
		}
		times = append(times, a.Time)
		if _, a, err = objects.ReadAll(ctx, tc.b, k, 10, driver.GetOptions{}); err != nil {
			t.Fatal(err)
		}
		times = append(times, a.Time)
		if a, err = tc.b.Put(ctx, k, []byte("y"), driver.PutOptions{If: driver.IfAbsent()}); err == nil {
			t.Fatalf("%s: a second IfAbsent write succeeded", tc.name)
		}
		times = append(times, a.Time)
		if _, a, err = objects.ReadAll(ctx, tc.b, k+"-missing", 10, driver.GetOptions{}); err == nil {
			t.Fatalf("%s: a Get of a missing key succeeded", tc.name)
		}
		times = append(times, a.Time)
		for i, st := range times {
			if got := !st.Date.IsZero(); got != tc.want {
				t.Errorf("%s: call %d (Put, Get, refused Put, missing Get) reports service time %v", tc.name, i, st)
			}
		}
	}
}

// TestNoServiceTimeCloses: the bucket NoServiceTime returns is an
// io.Closer, as the bucket it wraps may be.
func TestNoServiceTimeCloses(t *testing.T) {
	for _, b := range []driver.Bucket{faulty.NoServiceTime(mem.New()), faulty.OnFakeClocks(mem.New())} {
		c, ok := b.(io.Closer)
		if !ok {
			t.Fatalf("%T is no io.Closer", b)
		}
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	}
}
