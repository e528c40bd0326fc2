package azure_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/azure"
	"github.com/mushroomdb/bucketlease/driver/multipart"
)

// uncommittedBlocks is the drivertest Options.Pending of the driver: the
// IDs of the blocks staged for key and not committed, read with Get Block
// List. Blob Storage has no call that discards them, so a failed streamed
// write leaves them, and its *multipart.UploadError declares them left
// (Staged, not Aborted, no AbortErr), which the suite accepts; blocks no
// error declared fail it.
func uncommittedBlocks(c *container.Client) func(ctx context.Context, key string) ([]string, error) {
	return func(ctx context.Context, key string) ([]string, error) {
		bl, err := c.NewBlockBlobClient(key).GetBlockList(ctx, blockblob.BlockListTypeUncommitted, nil)
		if bloberror.HasCode(err, bloberror.BlobNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		var ids []string
		for _, b := range bl.UncommittedBlocks {
			if b.Name != nil {
				ids = append(ids, *b.Name)
			}
		}
		return ids, nil
	}
}

// TestUncommittedBlocksSeen is the positive control of uncommittedBlocks:
// it sees the blocks a failed streamed write leaves, and the write's error
// declares them left, which is why stream-failed-leaves-nothing accepts
// them (drivertest's TestStreamNotAbortedSeenThroughOptionsPending fails
// a driver whose error claims an abort and leaves the same).
func TestUncommittedBlocksSeen(t *testing.T) {
	cs := emulator(t)
	cc := containerClient(t, cs, newContainer(t, cs), nil)
	b, pending := azure.New(cc), uncommittedBlocks(cc)
	ctx := t.Context()
	if ids, err := pending(ctx, "k"); err != nil || len(ids) != 0 {
		t.Fatalf("before any write: %v, %v; want none", ids, err)
	}
	calls := 0
	gate := func() error {
		if calls++; calls > 2 {
			return errors.New("fenced")
		}
		return nil
	}
	body := io.LimitReader(zeros{}, 3*driver.MinPartSize)
	_, err := b.PutStream(ctx, "k", body, driver.PutOptions{If: driver.IfAbsent()},
		&driver.StreamOptions{PartSize: driver.MinPartSize, Concurrency: 1, MayStart: gate})
	var ue *multipart.UploadError
	if !errors.As(err, &ue) || !ue.Staged || ue.Aborted || ue.AbortErr != nil {
		t.Fatalf("PutStream refused at its third block: %v; want an UploadError declaring its blocks left", err)
	}
	if !strings.Contains(err.Error(), "left uncommitted") {
		t.Errorf("the error %q does not say the blocks are left", err)
	}
	// A block in flight when MayStart refused is cancelled, so it may not
	// have been staged.
	if ids, perr := pending(ctx, "k"); perr != nil || len(ids) == 0 || len(ids) > 2 {
		t.Fatalf("after the failed write: %v, %v; want the 1 or 2 blocks it started", ids, perr)
	}
}

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
