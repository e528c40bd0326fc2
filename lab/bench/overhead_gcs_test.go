package bench

import (
	"context"
	"sync/atomic"
	"testing"

	"cloud.google.com/go/storage"
	"google.golang.org/api/option"

	"github.com/mushroomdb/bucketlease/driver/gcs"
	"github.com/mushroomdb/bucketlease/internal/testsupport/testenv"
)

// gcsPairs measures the gcs driver against the storage client's Writer and
// Reader on the same client, on fake-gcs-server. The client is built as the
// driver's gs:// opener builds it for an http:// endpoint: no credentials,
// JSON reads.
func gcsPairs(tb testing.TB) []Pair {
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
	// fake-gcs-server keeps its objects in memory and scripts/bench
	// discards it; the bucket is not emptied.
	return driverPairs(tb, gcs.New(c, name), gcsRaw(tb, c.Bucket(name)))
}

// gcsRaw is one multipart upload with a generation precondition (ChunkSize
// 0, as the driver sends it) and one reader, straight on the client.
func gcsRaw(tb testing.TB, bkt *storage.BucketHandle) rawOps {
	tb.Helper()
	ctx := context.Background()
	put := func(ctx context.Context, obj *storage.ObjectHandle) (int64, error) {
		w := obj.NewWriter(ctx)
		w.ChunkSize = 0
		w.ContentType = "application/octet-stream"
		_, err := w.Write(payload)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return 0, err
		}
		return w.Attrs().Generation, nil
	}
	gen, err := put(ctx, bkt.Object("r-cas").If(storage.Conditions{DoesNotExist: true}))
	if err != nil {
		tb.Fatalf("seeding r-cas: %v", err)
	}
	if _, err := put(ctx, bkt.Object("r-get")); err != nil {
		tb.Fatalf("seeding r-get: %v", err)
	}
	var fresh atomic.Int64
	return rawOps{
		putIfMatch: func(ctx context.Context) error {
			g, err := put(ctx, bkt.Object("r-cas").If(storage.Conditions{GenerationMatch: gen}))
			if err == nil {
				gen = g
			}
			return err
		},
		putIfAbsent: func(ctx context.Context) error {
			_, err := put(ctx, bkt.Object(freshKey("r-fresh/", &fresh)).If(storage.Conditions{DoesNotExist: true}))
			return err
		},
		get: func(ctx context.Context) error {
			r, err := bkt.Object("r-get").NewReader(ctx)
			if err != nil {
				return err
			}
			return drain(r)
		},
	}
}
