package bench

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/mushroomdb/bucketlease/driver/azure"
	"github.com/mushroomdb/bucketlease/internal/testsupport/testenv"
)

func init() { targets = append(targets, target{"azure", azurePairs}) }

// azurePairs measures the azure driver against blockblob Upload and blob
// DownloadStream on the same container client, on Azurite.
func azurePairs(tb testing.TB) []Pair {
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
	return driverPairs(tb, azure.New(c), azureRaw(tb, c))
}

// azureRaw is one Put Blob (blockblob Upload) with If-Match or
// If-None-Match: *, and one Get Blob (DownloadStream). The CAS loop and the
// Get reuse one blob client each, as a caller with a fixed key would.
func azureRaw(tb testing.TB, c *container.Client) rawOps {
	tb.Helper()
	ctx := context.Background()
	put := func(ctx context.Context, bb *blockblob.Client, m *blob.ModifiedAccessConditions) (*azcore.ETag, error) {
		var opts *blockblob.UploadOptions
		if m != nil {
			opts = &blockblob.UploadOptions{AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: m}}
		}
		resp, err := bb.Upload(ctx, streaming.NopCloser(bytes.NewReader(payload)), opts)
		return resp.ETag, err
	}
	ifNoneMatch := func() *blob.ModifiedAccessConditions {
		star := azcore.ETagAny
		return &blob.ModifiedAccessConditions{IfNoneMatch: &star}
	}
	cas, got := c.NewBlockBlobClient("r-cas"), c.NewBlockBlobClient("r-get")
	etag, err := put(ctx, cas, ifNoneMatch())
	if err != nil {
		tb.Fatalf("seeding r-cas: %v", err)
	}
	if _, err := put(ctx, got, nil); err != nil {
		tb.Fatalf("seeding r-get: %v", err)
	}
	var fresh atomic.Int64
	return rawOps{
		putIfMatch: func(ctx context.Context) error {
			e, err := put(ctx, cas, &blob.ModifiedAccessConditions{IfMatch: etag})
			if err == nil {
				etag = e
			}
			return err
		},
		putIfAbsent: func(ctx context.Context) error {
			_, err := put(ctx, c.NewBlockBlobClient(freshKey("r-fresh/", &fresh)), ifNoneMatch())
			return err
		},
		get: func(ctx context.Context) error {
			resp, err := got.DownloadStream(ctx, nil)
			if err != nil {
				return err
			}
			return drain(resp.Body)
		},
	}
}
