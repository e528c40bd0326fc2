package bench

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	s3sdk "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/s3"
	"github.com/mushroomdb/bucketlease/internal/testsupport/miniotest"
	"github.com/mushroomdb/bucketlease/lease"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// acquireDelay is the one-way delay of the link in front of MinIO in
// BenchmarkAcquire: 25 ms each way, a 50 ms round trip, an ordinary
// cross-region link. BUCKETLEASE_BENCH_DELAY overrides it (0 measures
// loopback directly).
func acquireDelay(tb testing.TB) time.Duration {
	s := os.Getenv("BUCKETLEASE_BENCH_DELAY")
	if s == "" {
		return 25 * time.Millisecond
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		tb.Fatalf("BUCKETLEASE_BENCH_DELAY=%q: want a duration ≥ 0", s)
	}
	return d
}

// quiet discards the library's log lines, which would drown the benchmark's.
var quiet = slog.New(slog.DiscardHandler)

// A lockWay is one way of taking and giving back a lock on a prefix:
// acquire, do nothing, release.
type lockWay struct {
	name string
	run  func(ctx context.Context, prefix string) error
}

// acquireWays returns the three ways measured on one bucket of the MinIO
// server reached at endpoint: the bucketlease command (`hold URL -- true`),
// the library (lease.Acquire, then Release) and the plainest lock an SDK
// program can take (one PUT with If-None-Match: *, one DELETE), all
// through the same endpoint.
func acquireWays(tb testing.TB, srv miniotest.Server, endpoint, bucketName string) []lockWay {
	tb.Helper()
	bin := filepath.Join(tb.TempDir(), "bucketlease")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/mushroomdb/bucketlease/cmd/bucketlease").CombinedOutput(); err != nil {
		tb.Fatalf("building the command: %v\n%s", err, out)
	}
	env := append(os.Environ(),
		"AWS_ACCESS_KEY_ID="+srv.AccessKey, "AWS_SECRET_ACCESS_KEY="+srv.SecretKey, "AWS_SESSION_TOKEN=",
		"AWS_PROFILE=", "AWS_REGION="+miniotest.Region, "AWS_EC2_METADATA_DISABLED=true",
		"AWS_CONFIG_FILE="+os.DevNull, "AWS_SHARED_CREDENTIALS_FILE="+os.DevNull,
		"AWS_ENDPOINT_URL=", "AWS_ENDPOINT_URL_S3=", "XDG_STATE_HOME="+tb.TempDir(),
		lease.EnvConditional+"=")
	url := func(prefix string) string {
		return "s3://" + bucketName + "/" + prefix + "?endpoint=" + endpoint + "&path_style=true&region=" + miniotest.Region
	}
	client := srv.Client(endpoint)
	b := s3.New(client, bucketName)
	return []lockWay{
		{"cmd", func(ctx context.Context, prefix string) error {
			cmd := exec.CommandContext(ctx, bin, "hold", url(prefix), "--", "true")
			cmd.Env = env
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("bucketlease hold: %v\n%s", err, out)
			}
			return nil
		}},
		{"lib", func(ctx context.Context, prefix string) error {
			l, err := lease.Acquire(ctx, bucket.New(b, prefix), &lease.Options{Logger: quiet})
			if err != nil {
				return err
			}
			return l.Release(ctx)
		}},
		{"sdk", func(ctx context.Context, prefix string) error {
			key := aws.String(prefix + "/LOCK")
			if _, err := client.PutObject(ctx, &s3sdk.PutObjectInput{Bucket: &bucketName, Key: key,
				Body: strings.NewReader(`{"who":"bench"}`), IfNoneMatch: aws.String("*")}); err != nil {
				return err
			}
			_, err := client.DeleteObject(ctx, &s3sdk.DeleteObjectInput{Bucket: &bucketName, Key: key})
			return err
		}},
	}
}

// BenchmarkAcquire measures what a user waits for to take a lock and give
// it back, on MinIO behind a link that delays every byte (acquireDelay),
// three ways: the command, the library and one conditional PUT and one
// DELETE with the SDK. Each on a prefix never used (fresh) and on one
// released just before (released, the common case of a job that runs
// again). ms/op is the figure; BENCHMARKS.md records a run.
func BenchmarkAcquire(b *testing.B) {
	srv := miniotest.Env(b)
	endpoint := srv.URL()
	if d := acquireDelay(b); d > 0 {
		link, err := StartDelayLink(srv.Addr, d)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { link.Close() })
		endpoint = "http://" + link.Addr()
	}
	bucket := minioBucket(b, srv)
	var n atomic.Int64
	for _, way := range acquireWays(b, srv, endpoint, bucket) {
		b.Run(way.name+"/fresh", func(b *testing.B) {
			ctx := context.Background()
			for b.Loop() {
				if err := way.run(ctx, freshKey(way.name+"-fresh-", &n)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/op")
		})
		b.Run(way.name+"/released", func(b *testing.B) {
			ctx := context.Background()
			prefix := freshKey(way.name+"-again-", &n)
			if err := way.run(ctx, prefix); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if err := way.run(ctx, prefix); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/op")
		})
	}
}

// TestAcquireWays runs each way of BenchmarkAcquire twice on one prefix
// through a delay link, so that scripts/test exercises its setup, and
// checks that the lock is free afterwards and that the link delays: a
// lock taken and given back costs at least two round trips.
func TestAcquireWays(t *testing.T) {
	srv := miniotest.Env(t)
	const delay = 5 * time.Millisecond
	link, err := StartDelayLink(srv.Addr, delay)
	if err != nil {
		t.Fatal(err)
	}
	defer link.Close()
	bucketName := minioBucket(t, srv)
	for _, way := range acquireWays(t, srv, "http://"+link.Addr(), bucketName) {
		for i := range 2 {
			start := time.Now()
			if err := way.run(t.Context(), way.name); err != nil {
				t.Fatalf("%s, time %d: %v", way.name, i+1, err)
			}
			if took := time.Since(start); took < 4*delay {
				t.Errorf("%s took %v through a link of %v each way: less than two round trips", way.name, took, delay)
			}
		}
	}
	b := s3.New(srv.Client(srv.URL()), bucketName)
	for _, prefix := range []string{"cmd", "lib"} {
		st, err := admin.Inspect(t.Context(), bucket.New(b, prefix), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if st.State != admin.Released {
			t.Errorf("%s: the lease is %v after a release, want released", prefix, st.State)
		}
	}
	if _, _, err := b.Get(t.Context(), "sdk/LOCK", driver.GetOptions{}); err == nil {
		t.Error("the SDK's lock object is still there after its DELETE")
	}
}
