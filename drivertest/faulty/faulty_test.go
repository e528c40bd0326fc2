package faulty_test

import (
	"context"
	"testing"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/mem"
	"github.com/mushroomdb/bucketlease/drivertest/faulty"
	"github.com/mushroomdb/bucketlease/internal/testsupport/wrapcheck"
)

// TestNoServiceTimeHidesTheReports: through NoServiceTime, neither Get nor
// Put reports the service's time that the mem bucket under it reports.
func TestNoServiceTimeHidesTheReports(t *testing.T) {
	inner := mem.New()
	for _, tc := range []struct {
		name string
		b    driver.Bucket
		want bool
	}{{"mem", inner, true}, {"NoServiceTime(mem)", faulty.NoServiceTime(inner), false}} {
		reported := 0
		ctx := driver.WithServiceTime(context.Background(), func(driver.ServiceTime) { reported++ })
		if _, err := tc.b.Put(ctx, "k-"+tc.name, []byte("x"), driver.IfAbsent()); err != nil {
			t.Fatal(err)
		}
		if _, _, err := driver.ReadAll(ctx, tc.b, "k-"+tc.name, 10); err != nil {
			t.Fatal(err)
		}
		if got := reported == 2; got != tc.want {
			t.Errorf("%s: %d reports for a Put and a Get", tc.name, reported)
		}
	}
	wrapcheck.Check(t, "noServiceTime", func(_ *testing.T, in driver.Bucket) driver.Bucket { return faulty.NoServiceTime(in) })
}
