package bench

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/mem"
	"github.com/mushroomdb/bucketlease/driver/s3"
	"github.com/mushroomdb/bucketlease/internal/testsupport/miniotest"
)

// BenchmarkManyLeasesMem holds 10,000 leases on the in-memory driver for
// three TTLs (TTL 3 s) and reports the cost per lease and per renewal. Run
// with -benchtime=1x: one hold is the measurement.
func BenchmarkManyLeasesMem(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(itoa(n), func(b *testing.B) {
			for b.Loop() {
				reportMany(b, mem.New(), n, 3*time.Second, 9*time.Second)
			}
		})
	}
}

// BenchmarkManyLeasesMinIO holds 1,000 leases through the s3 driver on the
// MinIO server for three TTLs at the default TTL of 30 s: about 100
// conditional PUTs a second. No lease may be fenced or lost. The client's
// idle-connection pool is raised to 1,024 per host (the SDK's default keeps
// 10), so that renewals reuse connections instead of opening and closing
// them. (At a 3 s TTL the same 1,000 leases need 1,000 PUTs a second, more
// than a MinIO server on a shared 2-core machine completes: the leases then
// fence themselves, as they should; see BENCHMARKS.md.) Run with
// -benchtime=1x.
func BenchmarkManyLeasesMinIO(b *testing.B) {
	srv := miniotest.Env(b)
	bucket := s3.New(s3Client(srv, miniotest.Region, false, 1024), minioBucket(b, srv))
	for b.Loop() {
		reportMany(b, bucket, 1000, 30*time.Second, 90*time.Second)
	}
}

// reportMany holds n leases and reports the measurements as metrics.
func reportMany(b *testing.B, bucket driver.Bucket, n int, ttl, hold time.Duration) {
	res, err := HoldMany(context.Background(), bucket, "bench", n, ttl, hold)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(res.BytesPerLease, "B/lease")
	b.ReportMetric(float64(res.CPUPerRenewal.Nanoseconds()), "cpu-ns/renewal")
	b.ReportMetric(float64(res.Renewals), "renewals")
	b.ReportMetric(float64(res.Spurious), "spurious")
	b.ReportMetric(100*res.BusiestSlotFrac, "busiest-tenth-%")
	b.Log(res)
	if res.Spurious != 0 {
		b.Errorf("%d spurious fences or losses", res.Spurious)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestHoldManySmall runs HoldMany at a small scale so the harness itself is
// tested on every run: every lease renews, none is fenced.
func TestHoldManySmall(t *testing.T) {
	res, err := HoldMany(context.Background(), mem.New(), "t", 50, 3*time.Second, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if res.Spurious != 0 || res.Renewals < 50 || res.BytesPerLease <= 0 {
		t.Fatalf("%v", res)
	}
}
