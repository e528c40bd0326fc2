package azure

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/multipart"
)

// listPage is the page size List asks for: Blob Storage's maximum (5,000)
// is the default; 1,000 keeps a page's memory small.
const listPage = 1000

// blockID returns the base64 ID of block n of upload. Every ID this driver
// makes has one length, as Blob Storage requires among a blob's
// uncommitted blocks.
func blockID(upload string, n int) string {
	return base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "bl%s-%06d", upload, n))
}

// newUploadID returns a random per-upload block ID prefix: 16 bytes as 32
// hex digits, so that two uploads to one blob never share a block ID and a
// commit names only its own upload's blocks.
func newUploadID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// PutStream stores the body read from r under key, with opts.Metadata, if
// opts.If holds when it is committed, and returns the new ETag. A body of
// one block is one conditional Put Blob; a longer one is staged as blocks
// (up to s.Parallel() in flight, s.Allow before each and before the commit)
// and committed by one Put Block List carrying the condition, which the
// service checks atomically with the commit. Block IDs carry a random
// prefix per upload, so two uploads to one blob cannot mix. On failure
// nothing is committed, and the staged blocks are left for the service to
// discard. docs/drivers.md ("Streaming writes" under azblob://) has the
// details.
func (b *Bucket) PutStream(ctx context.Context, key string, r io.Reader, opts driver.PutOptions, s *driver.StreamOptions) (driver.Attrs, error) {
	op, err := b.beginPut(ctx, key, opts)
	if err != nil {
		return driver.Attrs{}, err
	}
	steps := &blocks{b: b, ctx: ctx, key: key, cond: opts.If, md: op.Metadata, bb: b.c.NewBlockBlobClient(key), upload: newUploadID()}
	plan := multipart.Parts{Size: min(s.Size(), blockblob.MaxStageBlockBytes), Max: blockblob.MaxBlocks}
	return multipart.Stream(op, r, s, plan, steps)
}

// blocks are the multipart.UploadSteps of one upload: blocks staged with Put
// Block and committed with Put Block List.
type blocks struct {
	b    *Bucket
	ctx  context.Context // the caller's, for the look at the blob after a commit whose blocks were discarded
	key  string
	cond driver.Condition
	md   driver.Metadata // stored with the blob by the commit
	bb   *blockblob.Client

	upload  string       // the random prefix of the block IDs
	started atomic.Int32 // blocks whose Put Block was started
}

// Start sends nothing: a block blob's blocks need no upload to be begun.
func (s *blocks) Start(context.Context) error { return nil }

func (s *blocks) StagePart(ctx context.Context, n int, data []byte) error {
	s.started.Add(1)
	_, err := s.bb.StageBlock(ctx, blockID(s.upload, n-1), streaming.NopCloser(bytes.NewReader(data)), nil)
	return shorten(err)
}

func (s *blocks) PutSingle(ctx context.Context, data []byte) (driver.Version, error) {
	a, err := s.b.Put(ctx, s.key, data, driver.PutOptions{If: s.cond, Metadata: s.md})
	return a.Version, err
}

// Commit sends the Put Block List of blocks 1 to n under the condition.
func (s *blocks) Commit(ctx context.Context, n int) (driver.Version, error) {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = blockID(s.upload, i)
	}
	var raw *http.Response
	resp, err := s.bb.CommitBlockList(policy.WithCaptureResponse(ctx, &raw), ids, &blockblob.CommitBlockListOptions{
		AccessConditions: accessConditions(s.cond),
		HTTPHeaders:      &blob.HTTPHeaders{BlobContentType: to.Ptr("application/octet-stream")},
		Metadata:         toAzure(s.md),
	})
	if err != nil {
		if v, ok := landed(raw, http.StatusCreated); ok {
			return v, nil
		}
		kind := classify(err, s.cond)
		cause := shorten(err)
		if kind == nil && bloberror.HasCode(err, bloberror.InvalidBlockList) {
			kind, cause = s.discarded(s.ctx, s.cond, cause)
		}
		return "", &kindError{kind: kind, err: fmt.Errorf("the commit (Put Block List of %d blocks): %w", n, cause)}
	}
	if resp.ETag == nil {
		return "", nil // no version, which StreamParts reports
	}
	return driver.Version(*resp.ETag), nil
}

// Abort sends nothing, since Blob Storage has no call that discards
// uncommitted blocks, and says what becomes of them. committing is a
// failed commit, which may have landed (the OpError's kind tells:
// ErrPrecondition did not, ErrOutcomeUnknown may have).
func (s *blocks) Abort(_ context.Context, committing bool) multipart.Leftover {
	n := s.started.Load()
	if n == 0 {
		return multipart.Leftover{}
	}
	blocks := fmt.Sprintf("the %d blocks it started (IDs bl%s-*)", n, s.upload)
	const expiry = "Blob Storage discards them 7 days after the blob's last Put Block, or when the blob is next committed"
	if committing {
		return multipart.Leftover{Upload: blocks + " were sent to be committed; unless the commit landed, they are left uncommitted, and " + expiry}
	}
	return multipart.Leftover{Upload: "nothing was committed, and " + blocks + " are left uncommitted: " + expiry}
}

// Kind classifies a failed commit as Commit did, and a failed Put Block:
// a missing container and refused credentials, never a refused condition,
// which a block does not carry.
func (s *blocks) Kind(err error, commit bool) error {
	var ke *kindError
	if commit && errors.As(err, &ke) {
		return ke.kind
	}
	switch k := classify(err, driver.Condition{}); k {
	case driver.ErrBucketNotExist, driver.ErrPermission:
		return k
	}
	return nil
}

// kindError is a commit's error with its classification, made where the
// commit's answer was read.
type kindError struct {
	kind error
	err  error
}

func (e *kindError) Error() string { return e.err.Error() }
func (e *kindError) Unwrap() error { return e.err }

// discarded explains a commit refused with InvalidBlockList (another
// commit or a delete discarded its blocks): ErrPrecondition where the blob
// now breaks cond, else an error saying so.
func (s *blocks) discarded(ctx context.Context, cond driver.Condition, cause error) (error, error) {
	cause = fmt.Errorf("%w: the staged blocks were discarded, which the service does when the blob is committed "+
		"by another writer (or deleted) after they were staged", cause)
	if cond == (driver.Condition{}) {
		return nil, cause
	}
	props, err := s.bb.GetProperties(ctx, nil)
	v, match := cond.Match()
	switch {
	case err == nil && cond == driver.IfAbsent():
		return driver.ErrPrecondition, fmt.Errorf("%w; the blob exists now", cause)
	case err == nil && match && (props.ETag == nil || driver.Version(*props.ETag) != v):
		return driver.ErrPrecondition, fmt.Errorf("%w; the blob's version is not the one the condition names", cause)
	case err != nil && match && bloberror.HasCode(err, bloberror.BlobNotFound):
		return driver.ErrPrecondition, fmt.Errorf("%w; the blob does not exist now", cause)
	}
	return nil, cause
}

// List yields the committed blobs whose names start with prefix, in
// lexical order, with their ETags as Versions.
func (b *Bucket) List(ctx context.Context, prefix string) iter.Seq2[driver.Object, error] {
	return driver.Listing(ctx, driverName, prefix, func(op *driver.Op, yield func(driver.Object, error) bool) {
		fail := func(kind, err error) { yield(driver.Object{}, op.Fail(kind, shorten(err))) }
		o := &container.ListBlobsFlatOptions{MaxResults: to.Ptr(int32(listPage)), Include: container.ListBlobsInclude{Metadata: true}}
		if prefix != "" {
			o.Prefix = &prefix
		}
		pager := b.c.NewListBlobsFlatPager(o)
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				kind := classify(err, driver.Condition{})
				if kind == driver.ErrNotExist {
					kind = nil
				}
				fail(kind, err)
				return
			}
			if page.Segment == nil {
				continue
			}
			for _, item := range page.Segment.BlobItems {
				if item == nil || item.Name == nil || item.Properties == nil {
					continue
				}
				p := item.Properties
				if p.ETag == nil || *p.ETag == "" {
					fail(nil, fmt.Errorf("the listing of %q carried no ETag", *item.Name))
					return
				}
				obj := driver.Object{Key: *item.Name, Version: quoted(string(*p.ETag)), Metadata: fromAzure(item.Metadata)}
				if p.ContentLength != nil {
					obj.Size = *p.ContentLength
				}
				if p.LastModified != nil {
					obj.ModTime = *p.LastModified
				}
				if !yield(obj, nil) {
					return
				}
			}
		}
	})
}

// shorten puts a service error behind its one-line message (status and
// error code), as Bucket.fail does, for errors nested in an UploadError.
func shorten(err error) error {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return &serviceError{re: re, err: err}
	}
	return err
}

// quoted returns an ETag in the quoted form response headers carry it in
// (the listing's XML carries it bare), so that a listed Version is the one
// Get returns and If-Match takes.
func quoted(etag string) driver.Version {
	if strings.HasPrefix(etag, `"`) {
		return driver.Version(etag)
	}
	return driver.Version(`"` + etag + `"`)
}
