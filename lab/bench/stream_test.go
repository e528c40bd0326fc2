package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/storage"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	s3sdk "github.com/aws/aws-sdk-go-v2/service/s3"
	miniogo "github.com/minio/minio-go/v7"
	miniocreds "github.com/minio/minio-go/v7/pkg/credentials"
	"google.golang.org/api/option"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/azure"
	"github.com/mushroomdb/bucketlease/driver/gcs"
	"github.com/mushroomdb/bucketlease/driver/minio"
	"github.com/mushroomdb/bucketlease/driver/r2"
	"github.com/mushroomdb/bucketlease/driver/s3"
	"github.com/mushroomdb/bucketlease/internal/leaseseam"
	"github.com/mushroomdb/bucketlease/internal/testsupport/miniotest"
	"github.com/mushroomdb/bucketlease/internal/testsupport/testenv"
	"github.com/mushroomdb/bucketlease/lease"
)

// The part size and concurrency of every streamed write measured, both
// sides alike: the drivers' defaults, so the heap target is 16 MiB × 4 +
// 16 MiB = 80 MiB.
const (
	streamPart        = 16 << 20
	streamConcurrency = 4
	// heapSlack is what the heap target allows beyond part size ×
	// concurrency.
	heapSlack = 16 << 20
)

// streamOpts are the StreamOptions of the driver side.
func streamOpts(part int64, conc int) *driver.StreamOptions {
	return &driver.StreamOptions{PartSize: part, Concurrency: conc}
}

// A streamTarget is one driver on its emulator, with its SDK's uploader.
// open creates a fresh bucket and returns the pair at the given part size
// and concurrency.
type streamTarget struct {
	name string
	open func(tb testing.TB, part int64, conc int) StreamPair
}

var streamTargets = []streamTarget{
	{"s3", s3Stream},
	{"r2", r2Stream},
	{"minio", minioStream},
	{"gcs", gcsStream},
	{"azure", azureStream},
}

// BenchmarkStream measures a streamed IfAbsent write of a body of unknown
// length (Body) through Lease.Bucket() against the SDK's own uploader for
// that service, at equal part size and concurrency, on the same server and
// client, alternating in one loop (one round is one write of each side;
// -benchtime 3x is three rounds, and the setup runs once). It reports each side's median throughput,
// their ratio (thru-driver/raw, the figure the ≥ 0.95 target applies to)
// and each side's peak heap growth during a write (driver-heap-MiB,
// against heap-target-MiB = part size × concurrency + 16 MiB). The body is
// $BUCKETLEASE_BENCH_STREAM_SIZE (default 64 MiB; scripts/bench passes
// 1GiB).
func BenchmarkStream(b *testing.B) {
	size, err := envSize(EnvStreamSize, 64<<20)
	if err != nil {
		b.Fatal(err)
	}
	for _, tg := range streamTargets {
		b.Run(tg.name, func(b *testing.B) {
			p := tg.open(b, streamPart, streamConcurrency)
			b.Run("interleaved", func(b *testing.B) {
				b.SetBytes(2 * size)
				run := NewStreamRun(p, size)
				for b.Loop() {
					if err := run.Round(context.Background()); err != nil {
						b.Fatal(err)
					}
				}
				reportStream(b, run.Result(), streamPart, streamConcurrency)
			})
		})
	}
}

// reportStream reports a StreamResult as metrics.
func reportStream(b *testing.B, res StreamResult, part int64, conc int) {
	const mib = 1 << 20
	b.ReportMetric(res.Ratio(), "thru-driver/raw")
	b.ReportMetric(res.PairedRatio, "paired-thru-driver/raw")
	b.ReportMetric(res.DriverRate/mib, "driver-MiB/s")
	b.ReportMetric(res.RawRate/mib, "raw-MiB/s")
	b.ReportMetric(float64(res.DriverHeap)/mib, "driver-heap-MiB")
	b.ReportMetric(float64(res.RawHeap)/mib, "raw-heap-MiB")
	b.ReportMetric(float64(res.DriverLive)/mib, "driver-live-MiB")
	b.ReportMetric(float64(res.RawLive)/mib, "raw-live-MiB")
	b.ReportMetric(float64(part*int64(conc)+heapSlack)/mib, "heap-target-MiB")
	b.ReportMetric(float64(res.Size)/mib, "size-MiB")
	b.ReportMetric(float64(res.Rounds), "rounds")
}

// leaseFor acquires a lease on prefix "lease" of b for the benchmark, keeps
// it renewed until tb ends, and proves the streamed commit's condition (the
// lease does it once, on its first conditional streamed write) before any
// timing.
func leaseFor(tb testing.TB, b driver.Bucket) *lease.Lease {
	tb.Helper()
	ctx := context.Background()
	l, err := lease.Acquire(ctx, bucket.New(b, "lease"), leaseseam.With(&lease.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, leaseseam.Seams{Getenv: func(string) string { return "" }}))
	if err != nil {
		tb.Fatalf("acquiring the lease: %v", err)
	}
	kctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); l.Keep(kctx) }()
	tb.Cleanup(func() {
		if err := l.Release(ctx); err != nil {
			tb.Logf("release: %v", err)
		}
		stop()
		<-done
	})
	if _, err := l.Bucket().Driver().PutStream(ctx, "warm-up", Body(1), driver.PutOptions{If: driver.IfAbsent()}, nil); err != nil {
		tb.Fatalf("first streamed write through the lease: %v", err)
	}
	if err := l.Bucket().Driver().Delete(ctx, "warm-up", driver.Condition{}); err != nil {
		tb.Fatal(err)
	}
	return l
}

// fencedPair builds the pair of a driver: the driver side streams with
// IfAbsent through Lease.Bucket() of a lease on b (keys under "lease/"),
// the raw side calls raw; Clean deletes through b. Both sides are warmed
// up by one small write each.
func fencedPair(tb testing.TB, name string, b driver.Bucket, part int64, conc int, raw StreamOp) StreamPair {
	tb.Helper()
	l := leaseFor(tb, b)
	fb := l.Bucket().Driver()
	p := StreamPair{Name: name,
		Driver: func(ctx context.Context, key string, r io.Reader) error {
			_, err := fb.PutStream(ctx, key, r, driver.PutOptions{If: driver.IfAbsent()}, streamOpts(part, conc))
			return err
		},
		Raw: raw,
		Clean: func(ctx context.Context, key string) error {
			if strings.HasPrefix(key, "d-") {
				key = "lease/" + key
			}
			return b.Delete(ctx, key, driver.Condition{})
		},
	}
	ctx := context.Background()
	if err := raw(ctx, "r-warm-up", Body(1)); err != nil {
		tb.Fatalf("%s: warm-up of the raw side: %v", name, err)
	}
	if err := p.Clean(ctx, "r-warm-up"); err != nil {
		tb.Fatal(err)
	}
	return p
}

// s3Uploader is the raw side of s3 and r2: aws-sdk-go-v2's transfer
// manager (the successor of feature/s3/manager) on the same client, with
// If-None-Match: * and the client's checksum setting.
func s3Uploader(c *s3sdk.Client, bucket string, part int64, conc int, whenRequired bool) StreamOp {
	tm := transfermanager.New(c, func(o *transfermanager.Options) {
		o.PartSizeBytes = part
		o.Concurrency = conc
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenSupported
		if whenRequired {
			o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		}
	})
	return func(ctx context.Context, key string, r io.Reader) error {
		_, err := tm.UploadObject(ctx, &transfermanager.UploadObjectInput{Bucket: &bucket, Key: &key, Body: r, IfNoneMatch: aws.String("*")})
		return err
	}
}

func s3Stream(tb testing.TB, part int64, conc int) StreamPair {
	srv := miniotest.Env(tb)
	bucket := minioBucket(tb, srv)
	c := s3Client(srv, miniotest.Region, false, 0)
	return fencedPair(tb, "s3", s3.New(c, bucket), part, conc, s3Uploader(c, bucket, part, conc, false))
}

func r2Stream(tb testing.TB, part int64, conc int) StreamPair {
	srv := miniotest.Env(tb)
	bucket := minioBucket(tb, srv)
	o := r2.ClientOptions("0123456789abcdef0123456789abcdef")
	c := s3Client(srv, o.Region, o.ChecksumWhenRequired, 0)
	return fencedPair(tb, "r2", r2.New(c, bucket), part, conc, s3Uploader(c, bucket, part, conc, o.ChecksumWhenRequired))
}

// minioStream's raw side is minio-go's PutObject with size -1 (its
// streaming upload of unknown length), PartSize and NumThreads as the
// driver's, ConcurrentStreamParts so that the parts go in parallel as the
// driver's do, and If-None-Match: *.
func minioStream(tb testing.TB, part int64, conc int) StreamPair {
	srv := miniotest.Env(tb)
	bucket := minioBucket(tb, srv)
	c, err := miniogo.New(srv.Addr, &miniogo.Options{Creds: miniocreds.NewStaticV4(srv.AccessKey, srv.SecretKey, "")})
	if err != nil {
		tb.Fatal(err)
	}
	raw := func(ctx context.Context, key string, r io.Reader) error {
		opts := miniogo.PutObjectOptions{PartSize: uint64(part), NumThreads: uint(conc), ConcurrentStreamParts: conc > 1}
		opts.SetMatchETagExcept("*")
		_, err := c.PutObject(ctx, bucket, key, r, -1, opts)
		return err
	}
	return fencedPair(tb, "minio", minio.New(c, bucket), part, conc, raw)
}

// gcsStream's raw side is the storage client's Writer with ChunkSize set
// to the driver's chunk (the part size, a multiple of 256 KiB) on
// Object(key).If(DoesNotExist): a resumable upload, one chunk at a time,
// as the driver's.
func gcsStream(tb testing.TB, part int64, conc int) StreamPair {
	const v = "BUCKETLEASE_TEST_GCS_ENDPOINT"
	endpoint := testenv.Emulator(tb, "fake-gcs-server", v)[v]
	ctx := context.Background()
	c, err := storage.NewClient(ctx, option.WithEndpoint(endpoint+"/storage/v1/"),
		option.WithoutAuthentication(), storage.WithJSONReads())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	name := randomName("blbench-")
	if err := c.Bucket(name).Create(ctx, "bucketlease-bench", nil); err != nil {
		tb.Fatalf("creating bucket %s on fake-gcs-server: %v", name, err)
	}
	bkt := c.Bucket(name)
	raw := func(ctx context.Context, key string, r io.Reader) error {
		w := bkt.Object(key).If(storage.Conditions{DoesNotExist: true}).NewWriter(ctx)
		w.ChunkSize = int(part / (256 << 10) * (256 << 10))
		w.ContentType = "application/octet-stream"
		_, err := io.Copy(w, r)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		return err
	}
	return fencedPair(tb, "gcs", gcs.New(c, name), part, conc, raw)
}

// azureStream's raw side is blockblob's UploadStream with BlockSize and
// Concurrency as the driver's and If-None-Match: *, on the same container
// client.
func azureStream(tb testing.TB, part int64, conc int) StreamPair {
	const v = "BUCKETLEASE_TEST_AZURITE_CONNECTION_STRING"
	cs := testenv.Emulator(tb, "Azurite", v)[v]
	name := randomName("blbench-")
	c, err := container.NewClientFromConnectionString(cs, name, nil)
	if err != nil {
		tb.Fatal("the emulator's connection string does not parse") // never the string itself
	}
	if _, err := c.Create(context.Background(), nil); err != nil {
		tb.Fatalf("creating container %s on Azurite: %v", name, err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if _, err := c.Delete(ctx, nil); err != nil {
			tb.Logf("cleanup: deleting container %s: %v", name, err)
		}
	})
	raw := func(ctx context.Context, key string, r io.Reader) error {
		star := azcore.ETagAny
		_, err := c.NewBlockBlobClient(key).UploadStream(ctx, r, &blockblob.UploadStreamOptions{
			BlockSize: part, Concurrency: conc,
			AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: &star}},
		})
		return err
	}
	return fencedPair(tb, "azure", azure.New(c), part, conc, raw)
}

// TestStreamTargets writes a body of one part and a byte through each
// streaming pair once (part 5 MiB, concurrency 2), so that the benchmark's
// setup is exercised by scripts/test; each emulator not running is
// skipped.
func TestStreamTargets(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 5 MiB per side and driver")
	}
	for _, tg := range streamTargets {
		t.Run(tg.name, func(t *testing.T) {
			p := tg.open(t, driver.MinPartSize, 2)
			res, err := InterleaveStreams(t.Context(), p, 1, driver.MinPartSize+1)
			if err != nil {
				t.Fatal(err)
			}
			if res.DriverRate <= 0 || res.RawRate <= 0 {
				t.Fatalf("%+v", res)
			}
		})
	}
}

// BenchmarkStreamRenewals holds two leases, TTL 30 s and TTL 3 s, through
// one s3 driver and client on MinIO behind a Link of
// $BUCKETLEASE_BENCH_LINK_RATE each way (default 8 MiB/s), while four
// streamed uploads through the leases' Bucket() offer 4× the link's rate,
// for $BUCKETLEASE_BENCH_RENEW_HOLD (default 25 s; scripts/bench passes
// 90s). Each upload is 32 MiB in parts of 5 MiB, 4 at once. It reports,
// per TTL, spurious fences (must be 0), the p99 latency of a renewal's
// conditional Put (must be under TTL/6) and the median of 5 renewals timed
// on the idle link before the load, the share of the link's rate the
// uploads used, and the connections the client opened. With
// $BUCKETLEASE_BENCH_MAX_CONNS > 0 the client's transport allows that many
// connections per host (the SDK's default is 2,048), so that renewals
// queue behind parts for a connection: the experiment that shows why
// small control requests want a pool of their own. Run with -benchtime 1x.
func BenchmarkStreamRenewals(b *testing.B) {
	hold, err := envDuration(EnvRenewHold, 25*time.Second)
	if err != nil {
		b.Fatal(err)
	}
	rate, err := envSize(EnvLinkRate, 8<<20)
	if err != nil {
		b.Fatal(err)
	}
	maxConns := 0
	if v := os.Getenv(EnvMaxConns); v != "" {
		if maxConns, err = strconv.Atoi(v); err != nil || maxConns < 0 {
			b.Fatalf("%s=%q: want a number of connections", EnvMaxConns, v)
		}
	}
	srv := miniotest.Env(b)
	bucket := minioBucket(b, srv)
	for b.Loop() {
		link, err := StartLink(srv.Addr, rate)
		if err != nil {
			b.Fatal(err)
		}
		slow := srv
		slow.Addr = link.Addr()
		c := s3Client(slow, miniotest.Region, false, 0)
		if maxConns > 0 {
			c = s3sdk.New(c.Options(), func(o *s3sdk.Options) {
				o.HTTPClient = awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) { t.MaxConnsPerHost = maxConns })
			})
		}
		bkt := s3.New(c, bucket)
		res, err := RenewUnderLoad(context.Background(), bkt, "renew", RenewLoad{
			TTLs: []time.Duration{30 * time.Second, 3 * time.Second}, Hold: hold,
			Writers: 4, Body: 32 << 20, Offered: 4 * float64(rate),
			Stream: driver.StreamOptions{PartSize: driver.MinPartSize, Concurrency: 4},
			Idle:   5, Carried: func() int64 { up, _ := link.Carried(); return up },
		})
		opened := link.Opened()
		link.Close()
		if err != nil {
			b.Fatal(err)
		}
		for _, l := range res.Leases {
			b.Log(l)
			b.Logf("ttl %v: slowest renewal %s", l.TTL, l.Slowest)
			for _, f := range l.Failures {
				b.Logf("ttl %v: failed renewal %s", l.TTL, f)
			}
			for _, f := range l.Fences {
				b.Logf("ttl %v: %s", l.TTL, f)
			}
			name := fmt.Sprintf("ttl%.0fs", l.TTL.Seconds())
			b.ReportMetric(float64(l.Spurious), name+"-spurious")
			b.ReportMetric(float64(l.Renewals), name+"-renewals")
			b.ReportMetric(float64(l.Failed), name+"-failed")
			b.ReportMetric(float64(l.P99.Nanoseconds()), name+"-p99-ns")
			b.ReportMetric(float64(l.P50.Nanoseconds()), name+"-p50-ns")
			b.ReportMetric(float64(l.Max.Nanoseconds()), name+"-max-ns")
			b.ReportMetric(float64((l.TTL / 6).Nanoseconds()), name+"-limit-ns")
			b.ReportMetric(float64(l.IdleP50.Nanoseconds()), name+"-idle-p50-ns")
		}
		up := res.LinkBytes
		b.ReportMetric(float64(up)/res.Elapsed.Seconds()/float64(rate), "link-use")
		b.ReportMetric(float64(opened), "connections")
		b.ReportMetric(float64(maxConns), "max-conns-per-host")
		b.ReportMetric(float64(rate)/(1<<20), "link-MiB/s")
		b.ReportMetric(float64(res.Committed), "uploads")
		b.Logf("%d uploads committed (%d MiB), %d cut at the end of the hold, in %v; the link carried %d MiB up (%.0f%% of %d MiB/s) on %d connections opened in all",
			res.Committed, res.Bytes>>20, res.Aborted, res.Elapsed.Round(time.Millisecond), up>>20,
			100*float64(up)/res.Elapsed.Seconds()/float64(rate), rate>>20, opened)
	}
}
