package s3

import (
	"context"
	"fmt"

	"github.com/mushroomdb/bucketlease/driver"
)

// abortFunc is the Abort of the pending upload id of key that ListPending
// yields: AbortMultipartUpload, with an upload already gone (completed or
// aborted) a success.
func (b *Bucket) abortFunc(key, id string) func(context.Context) error {
	return func(ctx context.Context) error {
		op, err := driver.BeginDelete(ctx, b.caps, b.profile.Driver, key, driver.Condition{})
		if err != nil {
			return err
		}
		if err := (uploads{b: b, key: key}).Abort(op.Context(), id); err != nil {
			return op.Fail(kind(err, driver.Condition{}), fmt.Errorf("aborting the pending upload %s: %w", id, err))
		}
		return nil
	}
}
