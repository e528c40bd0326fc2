package azure_test

import (
	"context"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// uncommittedBlocks is the drivertest Options.Pending of the driver: the
// IDs of the blocks staged for key and not committed, read with Get Block
// List. Blob Storage has no call that discards them, so a failed streamed
// write leaves them, and its *driver.UploadError declares them left
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
