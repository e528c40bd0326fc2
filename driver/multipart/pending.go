package multipart

import (
	"context"
	"iter"
	"time"
)

// Pending is one staged upload not yet committed or aborted (an S3
// multipart upload), as PendingLister reports it.
type Pending struct {
	Key       string    // the key it would be committed under
	Upload    string    // the service's name for it (an S3 upload ID)
	Initiated time.Time // when it was started, if the service says
	// Abort removes the upload so that it can never be committed (nil
	// where the driver has no call for it); an upload already gone is no
	// error. It decides nothing about whose the upload is.
	Abort func(ctx context.Context) error
}

// PendingLister is the optional interface of a Bucket whose service can
// list the uploads staged under a prefix and not yet committed or aborted.
type PendingLister interface {
	// ListPending yields the pending uploads whose key starts with prefix,
	// in the service's order. A failure is yielded once, as the error of
	// the last pair.
	ListPending(ctx context.Context, prefix string) iter.Seq2[Pending, error]
}
