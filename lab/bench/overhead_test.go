package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	s3sdk "github.com/aws/aws-sdk-go-v2/service/s3"
	miniogo "github.com/minio/minio-go/v7"
	miniocreds "github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/minio"
	"github.com/mushroomdb/bucketlease/driver/r2"
	"github.com/mushroomdb/bucketlease/driver/s3"
	"github.com/mushroomdb/bucketlease/internal/testsupport/miniotest"
)

// payload is what every Put writes: the size of a lease record.
var payload = bytes.Repeat([]byte("x"), 256)

// A target is one driver on its emulator. open creates a fresh bucket,
// seeds it, and returns the pairs of operations to measure; it skips (or,
// under scripts/test and scripts/bench, fails) if the emulator is missing.
type target struct {
	name string
	open func(tb testing.TB) []Pair
}

// targets are the drivers measured, in the order of the summary table. The
// azure target registers itself from its own file.
var targets = []target{
	{"s3", s3Pairs},
	{"r2", r2Pairs},
	{"minio", minioPairs},
	{"gcs", gcsPairs},
}

// BenchmarkOverhead measures each driver's conditional Put and Get against
// the raw SDK call that sends the same request to the same server. Each
// operation has three sub-benchmarks: driver and raw (ns/op, B/op,
// allocs/op of each alone) and interleaved (both sides alternately in one
// loop; its driver/raw metric is the ratio of their median latencies, the
// figure the ≤ 1.10 target applies to).
func BenchmarkOverhead(b *testing.B) {
	for _, tg := range targets {
		b.Run(tg.name, func(b *testing.B) {
			for _, p := range tg.open(b) {
				b.Run(p.Name, func(b *testing.B) { benchPair(b, p) })
			}
		})
	}
}

func benchPair(b *testing.B, p Pair) {
	loop := func(op Op) func(*testing.B) {
		return func(b *testing.B) {
			b.ReportAllocs()
			ctx := context.Background()
			for b.Loop() {
				if err := op(ctx); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	b.Run("driver", loop(p.Driver))
	b.Run("raw", loop(p.Raw))
	b.Run("interleaved", func(b *testing.B) {
		res, err := Interleave(context.Background(), p, b.N)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(res.Ratio(), "driver/raw")
		b.ReportMetric(res.PairedRatio, "paired-driver/raw")
		b.ReportMetric(float64(res.DriverMedian.Nanoseconds()), "driver-median-ns")
		b.ReportMetric(float64(res.RawMedian.Nanoseconds()), "raw-median-ns")
	})
}

// driverPairs returns the three operations on b, each paired with its raw
// counterpart. The driver's keys are its own ("d-…"); raw calls use "r-…"
// keys, seeded by the raw side, so that neither side's CAS chain or key
// counter disturbs the other's.
func driverPairs(tb testing.TB, b driver.Bucket, raw rawOps) []Pair {
	tb.Helper()
	ctx := context.Background()
	a, err := b.Put(ctx, "d-cas", payload, driver.PutOptions{If: driver.IfAbsent()})
	v := a.Version
	if err != nil {
		tb.Fatalf("seeding d-cas: %v", err)
	}
	if _, err := b.Put(ctx, "d-get", payload, driver.PutOptions{}); err != nil {
		tb.Fatalf("seeding d-get: %v", err)
	}
	var fresh atomic.Int64
	return []Pair{
		{Name: "put-ifmatch", Raw: raw.putIfMatch, Driver: func(ctx context.Context) error {
			na, err := b.Put(ctx, "d-cas", payload, driver.PutOptions{If: driver.IfMatch(v)})
			if err == nil {
				v = na.Version
			}
			return err
		}},
		{Name: "put-ifabsent", Raw: raw.putIfAbsent, Driver: func(ctx context.Context) error {
			_, err := b.Put(ctx, freshKey("d-fresh/", &fresh), payload, driver.PutOptions{If: driver.IfAbsent()})
			return err
		}},
		{Name: "get", Raw: raw.get, Driver: func(ctx context.Context) error {
			rc, _, err := b.Get(ctx, "d-get", driver.GetOptions{})
			if err != nil {
				return err
			}
			return drain(rc)
		}},
	}
}

// rawOps are the raw SDK calls: a CAS loop on "r-cas", IfAbsent on fresh
// "r-fresh/…" keys, and a Get of "r-get". The constructor seeds r-cas and
// r-get.
type rawOps struct {
	putIfMatch, putIfAbsent, get Op
}

// freshKey returns prefix followed by the next value of n.
func freshKey(prefix string, n *atomic.Int64) string {
	return fmt.Sprintf("%s%09d", prefix, n.Add(1))
}

// drain reads rc to the end and closes it, as a caller of Get does.
func drain(rc io.ReadCloser) error {
	_, err := io.Copy(io.Discard, rc)
	if cerr := rc.Close(); err == nil {
		err = cerr
	}
	return err
}

// randomName returns prefix and 12 random hex digits: a fresh bucket name.
func randomName(prefix string) string {
	var b [6]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// minioBucket creates a fresh bucket on the MinIO server and removes it,
// with everything in it, in one request (MinIO's force delete) when tb ends.
func minioBucket(tb testing.TB, srv miniotest.Server) string {
	tb.Helper()
	c, err := miniogo.New(srv.Addr, &miniogo.Options{Creds: miniocreds.NewStaticV4(srv.AccessKey, srv.SecretKey, "")})
	if err != nil {
		tb.Fatal(err)
	}
	name := randomName("blbench-")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.MakeBucket(ctx, name, miniogo.MakeBucketOptions{}); err != nil {
		tb.Fatalf("creating bucket %s on MinIO: %v", name, err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := c.RemoveBucketWithOptions(ctx, name, miniogo.RemoveBucketOptions{ForceDelete: true}); err != nil {
			tb.Logf("cleanup: removing bucket %s: %v", name, err)
		}
	})
	return name
}

// s3Client is an S3 client for the MinIO server, as miniotest builds it,
// with checksums only when required if whenRequired (the R2 profile's
// setting) and an idle-connection pool of poolSize per host.
func s3Client(srv miniotest.Server, region string, whenRequired bool, poolSize int) *s3sdk.Client {
	return s3sdk.New(s3sdk.Options{
		Region:       region,
		BaseEndpoint: aws.String(srv.URL()),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(srv.AccessKey, srv.SecretKey, ""),
		HTTPClient: awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
			t.MaxIdleConns = max(t.MaxIdleConns, poolSize)
			t.MaxIdleConnsPerHost = max(t.MaxIdleConnsPerHost, poolSize)
		}),
	}, func(o *s3sdk.Options) {
		if whenRequired {
			o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
			o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		}
	})
}

func s3Pairs(tb testing.TB) []Pair {
	srv := miniotest.Env(tb)
	bucket := minioBucket(tb, srv)
	c := s3Client(srv, miniotest.Region, false, 0)
	return driverPairs(tb, s3.New(c, bucket), s3Raw(tb, c, bucket))
}

// r2Pairs measures the R2 driver: the S3 driver with the R2 profile, on a
// client set up as r2.ClientOptions says (region auto, path style,
// checksums only when required), pointed at MinIO.
func r2Pairs(tb testing.TB) []Pair {
	srv := miniotest.Env(tb)
	bucket := minioBucket(tb, srv)
	o := r2.ClientOptions("0123456789abcdef0123456789abcdef")
	c := s3Client(srv, o.Region, o.ChecksumWhenRequired, 0)
	return driverPairs(tb, r2.New(c, bucket), s3Raw(tb, c, bucket))
}

// s3Raw is aws-sdk-go-v2's PutObject and GetObject, as a caller would write
// them without the driver.
func s3Raw(tb testing.TB, c *s3sdk.Client, bucket string) rawOps {
	tb.Helper()
	ctx := context.Background()
	put := func(ctx context.Context, key string, ifMatch, ifNoneMatch *string) (*string, error) {
		out, err := c.PutObject(ctx, &s3sdk.PutObjectInput{
			Bucket: &bucket, Key: &key, Body: bytes.NewReader(payload),
			ContentLength: aws.Int64(int64(len(payload))), IfMatch: ifMatch, IfNoneMatch: ifNoneMatch,
		})
		if err != nil {
			return nil, err
		}
		return out.ETag, nil
	}
	etag, err := put(ctx, "r-cas", nil, aws.String("*"))
	if err != nil {
		tb.Fatalf("seeding r-cas: %v", err)
	}
	if _, err := put(ctx, "r-get", nil, nil); err != nil {
		tb.Fatalf("seeding r-get: %v", err)
	}
	var fresh atomic.Int64
	return rawOps{
		putIfMatch: func(ctx context.Context) error {
			e, err := put(ctx, "r-cas", etag, nil)
			if err == nil {
				etag = e
			}
			return err
		},
		putIfAbsent: func(ctx context.Context) error {
			_, err := put(ctx, freshKey("r-fresh/", &fresh), nil, aws.String("*"))
			return err
		},
		get: func(ctx context.Context) error {
			key := "r-get"
			out, err := c.GetObject(ctx, &s3sdk.GetObjectInput{Bucket: &bucket, Key: &key})
			if err != nil {
				return err
			}
			return drain(out.Body)
		},
	}
}

// minioPairs measures the minio driver against minio-go's Core calls on the
// same client.
func minioPairs(tb testing.TB) []Pair {
	srv := miniotest.Env(tb)
	bucket := minioBucket(tb, srv)
	c, err := miniogo.New(srv.Addr, &miniogo.Options{Creds: miniocreds.NewStaticV4(srv.AccessKey, srv.SecretKey, "")})
	if err != nil {
		tb.Fatal(err)
	}
	return driverPairs(tb, minio.New(c, bucket), minioRaw(tb, c, bucket))
}

// minioRaw is minio-go's Core PutObject with SetMatchETag or
// SetMatchETagExcept("*"), and Core GetObject: one request each.
func minioRaw(tb testing.TB, c *miniogo.Client, bucket string) rawOps {
	tb.Helper()
	core := miniogo.Core{Client: c}
	ctx := context.Background()
	put := func(ctx context.Context, key string, opts miniogo.PutObjectOptions) (string, error) {
		info, err := core.PutObject(ctx, bucket, key, bytes.NewReader(payload), int64(len(payload)), "", "", opts)
		return info.ETag, err
	}
	absent := miniogo.PutObjectOptions{}
	absent.SetMatchETagExcept("*")
	etag, err := put(ctx, "r-cas", absent)
	if err != nil {
		tb.Fatalf("seeding r-cas: %v", err)
	}
	if _, err := put(ctx, "r-get", miniogo.PutObjectOptions{}); err != nil {
		tb.Fatalf("seeding r-get: %v", err)
	}
	var fresh atomic.Int64
	return rawOps{
		putIfMatch: func(ctx context.Context) error {
			var opts miniogo.PutObjectOptions
			opts.SetMatchETag(etag)
			e, err := put(ctx, "r-cas", opts)
			if err == nil {
				etag = e
			}
			return err
		},
		putIfAbsent: func(ctx context.Context) error {
			var opts miniogo.PutObjectOptions
			opts.SetMatchETagExcept("*")
			_, err := put(ctx, freshKey("r-fresh/", &fresh), opts)
			return err
		},
		get: func(ctx context.Context) error {
			body, _, _, err := core.GetObject(ctx, bucket, "r-get", miniogo.GetObjectOptions{})
			if err != nil {
				return err
			}
			return drain(body)
		},
	}
}
