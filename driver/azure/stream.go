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
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/mushroomdb/bucketlease/driver"
)

var (
	_ driver.Streamer = (*Bucket)(nil)
	_ driver.Lister   = (*Bucket)(nil)
)

// listPage is the page size List asks for: Blob Storage's maximum (5,000)
// is the default; 1,000 keeps a page's memory small.
const listPage = 1000

// blockID returns the base64 block ID of block n of the upload whose
// random prefix is upload. Every ID of an upload, and of every upload by
// this driver, has one length (Blob Storage requires equal lengths among a
// blob's uncommitted blocks): "bl", 32 hex digits, "-", six digits, 41
// bytes before base64, within the 64 the service allows.
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

// PutStream stores the body read from r under key if cond holds when it is
// committed, and returns the new ETag.
//
// A body that fits in one block (opts.Size() bytes) is one conditional Put
// Blob, as Put sends. A longer one is staged as blocks of opts.Size()
// bytes (Put Block), up to opts.Parallel() of them in flight, and committed
// by one Put Block List carrying the condition (If-None-Match: * or
// If-Match), which the service checks atomically with the commit: nothing
// is visible before it, and a refusal there is ErrPrecondition with the
// blob left as it was. At most opts.Size() × opts.Parallel() bytes of the
// body are held at once. Block IDs carry a random prefix of fixed length
// per upload, so that a commit names only its own upload's blocks: two
// uploads to one blob cannot mix. When one of them commits, the service
// discards the other's uncommitted blocks, whose commit then fails (with
// ErrPrecondition where its condition no longer holds).
//
// opts.Allow (MayStart) is called right before each block is staged and
// before the commit (for a body of one block, before the part and before
// the commit, both just before the one request). If it refuses, nothing
// more is started.
//
// On any failure (ctx ended, r failed, MayStart refused, a block or the
// commit failed or was refused) the blocks in flight are cancelled and
// PutStream returns once none is, without committing anything. Blob
// Storage has no call that discards staged blocks: the service discards
// uncommitted blocks a week after the blob's last Put Block, or when the
// blob is next committed. The *driver.UploadError in the error says how
// many blocks were staged. r is read in the caller's goroutine, between
// checks of ctx: a Read that blocks holds PutStream until it returns.
func (b *Bucket) PutStream(ctx context.Context, key string, r io.Reader, cond driver.Condition, opts *driver.StreamOptions) (driver.Version, error) {
	op, err := b.begin(ctx, driver.OpPut, key, cond)
	if err != nil {
		return "", err
	}
	size := min(opts.Size(), blockblob.MaxStageBlockBytes)
	s := &stager{b: b, op: op, bb: b.c.NewBlockBlobClient(key), upload: newUploadID(), free: make(chan []byte, opts.Parallel()), limit: opts.Parallel(), size: size}
	s.ctx, s.cancel = context.WithCancelCause(op.Context())
	defer s.cancel(nil)

	buf, _ := s.buffer()
	n, rerr := driver.ReadPart(ctx, r, buf)
	if rerr != nil && rerr != io.EOF {
		return "", s.fail(nil, fmt.Errorf("reading the body: %w", rerr))
	}
	if rerr == io.EOF {
		// One block's worth or less: one conditional Put Blob.
		if err := opts.Allow(); err != nil {
			return "", s.fail(nil, fmt.Errorf("MayStart refused part 1: %w", err))
		}
		if err := opts.Allow(); err != nil {
			return "", s.fail(nil, fmt.Errorf("MayStart refused the commit: %w", err))
		}
		return b.Put(ctx, key, buf[:n], cond)
	}
	for {
		if len(s.ids) == blockblob.MaxBlocks {
			return "", s.abort(nil, fmt.Errorf("the body is longer than %d blocks of %d bytes, the most a block blob holds; use a larger part size", blockblob.MaxBlocks, size))
		}
		if err := opts.Allow(); err != nil {
			return "", s.abort(nil, fmt.Errorf("MayStart refused block %d: %w", len(s.ids)+1, err))
		}
		if err := s.stage(buf[:n]); err != nil {
			return "", s.abort(nil, err)
		}
		if rerr == io.EOF {
			break
		}
		if buf, err = s.buffer(); err != nil {
			return "", s.abort(nil, err)
		}
		n, rerr = driver.ReadPart(ctx, r, buf)
		if rerr != nil && rerr != io.EOF {
			return "", s.abort(nil, fmt.Errorf("reading the body: %w", rerr))
		}
		if n == 0 {
			// The body ended on a block boundary.
			break
		}
	}
	if err := s.wait(); err != nil {
		return "", s.fail(s.failedKind, err)
	}
	if err := opts.Allow(); err != nil {
		return "", s.fail(nil, fmt.Errorf("MayStart refused the commit: %w", err))
	}
	return s.commit(ctx, cond)
}

// stager stages the blocks of one upload.
type stager struct {
	b      *Bucket
	op     *driver.Op
	bb     *blockblob.Client
	upload string   // the random prefix of the block IDs
	ids    []string // of the blocks started, in order
	size   int64    // of a block
	limit  int      // buffers (blocks in flight, and the one being read)

	ctx    context.Context // of the Put Block requests, cancelled at the first failure
	cancel context.CancelCauseFunc
	free   chan []byte // buffers whose block has been staged
	made   int
	wg     sync.WaitGroup

	mu         sync.Mutex
	failed     error // the first block's failure
	failedKind error
}

// buffer returns a buffer for the next block: a new one while fewer than
// limit exist, else one whose block has been staged, once there is one.
func (s *stager) buffer() ([]byte, error) {
	select {
	case buf := <-s.free:
		return buf, nil
	default:
	}
	if s.made < s.limit {
		s.made++
		return make([]byte, s.size), nil
	}
	select {
	case buf := <-s.free:
		return buf, nil
	case <-s.ctx.Done():
		return nil, s.stopped()
	}
}

// stopped is the error of an upload whose block context ended: the first
// block's failure, or the context's end.
func (s *stager) stopped() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed != nil {
		return s.failed
	}
	return context.Cause(s.ctx)
}

// stage starts staging data as the next block, in a goroutine that gives
// data's buffer back when the request has ended.
func (s *stager) stage(data []byte) error {
	if err := s.ctx.Err(); err != nil {
		return s.stopped()
	}
	id := blockID(s.upload, len(s.ids))
	s.ids = append(s.ids, id)
	no := len(s.ids)
	s.wg.Go(func() {
		defer func() { s.free <- data[:cap(data)] }()
		_, err := s.bb.StageBlock(s.ctx, id, streaming.NopCloser(bytes.NewReader(data)), nil)
		s.mu.Lock()
		defer s.mu.Unlock()
		if err == nil {
			return
		}
		// A block ended by the upload's cancellation (an abort, or ctx) is
		// not the failure: what cancelled it is.
		if s.failed == nil && s.ctx.Err() == nil {
			s.failed = fmt.Errorf("block %d: %w", no, shorten(err))
			s.failedKind = stageKind(err)
			s.cancel(s.failed)
		}
	})
	return nil
}

// wait waits for every block in flight and returns the first failure.
func (s *stager) wait() error {
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed != nil {
		return s.failed
	}
	return nil
}

// abort cancels the blocks in flight, waits for them, and returns the
// error for cause (or for the first block's failure, if one failed first).
func (s *stager) abort(kind, cause error) error {
	s.cancel(cause)
	s.wg.Wait()
	s.mu.Lock()
	if s.failed != nil && !errors.Is(cause, s.failed) {
		cause = fmt.Errorf("%w (after %w)", cause, s.failed)
	}
	if kind == nil {
		kind = s.failedKind
	}
	s.mu.Unlock()
	return s.fail(kind, cause)
}

// fail builds the error of a failed upload: nothing was committed, and
// what was staged is left for the service to discard.
func (s *stager) fail(kind, cause error) error {
	return s.op.Fail(kind, s.uploadError(cause, false))
}

// uploadError says what the failed upload left: the blocks it started
// (staged, or perhaps staged if cancelled in flight), uncommitted. Blob
// Storage has no call that discards uncommitted blocks, so no abort is
// sent (UploadError.AbortErr stays nil) and Upload says what becomes of
// them. committing is a failed commit, which may have landed (the
// OpError's kind tells: ErrPrecondition did not, ErrOutcomeUnknown may
// have).
func (s *stager) uploadError(cause error, committing bool) *driver.UploadError {
	ue := &driver.UploadError{Err: cause}
	if len(s.ids) == 0 {
		return ue
	}
	ue.Staged = true
	blocks := fmt.Sprintf("the %d blocks it started (IDs bl%s-*)", len(s.ids), s.upload)
	const expiry = "Blob Storage discards them 7 days after the blob's last Put Block, or when the blob is next committed"
	if committing {
		ue.Upload = blocks + " were sent to be committed; unless the commit landed, they are left uncommitted, and " + expiry
	} else {
		ue.Upload = "nothing was committed, and " + blocks + " are left uncommitted: " + expiry
	}
	return ue
}

// stageKind classifies a failed Put Block: a missing container and
// refused credentials; never a refused condition, which a block does not
// carry.
func stageKind(err error) error {
	switch k := classify(err, driver.Condition{}); k {
	case driver.ErrBucketNotExist, driver.ErrPermission:
		return k
	}
	return nil
}

// commit sends the Put Block List under cond, through an Op of its own, so
// that a refusal after the SDK retried the commit (and not after it
// retried a block) is ErrOutcomeUnknown.
func (s *stager) commit(ctx context.Context, cond driver.Condition) (driver.Version, error) {
	cop, err := s.b.begin(ctx, driver.OpPut, s.op.Key, cond)
	if err != nil {
		return "", s.fail(nil, fmt.Errorf("the commit: %w", err))
	}
	var raw *http.Response
	resp, err := s.bb.CommitBlockList(policy.WithCaptureResponse(cop.Context(), &raw), s.ids, &blockblob.CommitBlockListOptions{
		AccessConditions: accessConditions(cond),
		HTTPHeaders:      &blob.HTTPHeaders{BlobContentType: to.Ptr("application/octet-stream")},
	})
	if err != nil {
		if v, ok := landed(raw, http.StatusCreated); ok {
			return v, nil
		}
		kind := classify(err, cond)
		cause := shorten(err)
		if kind == nil && bloberror.HasCode(err, bloberror.InvalidBlockList) {
			kind, cause = s.discarded(ctx, cond, cause)
		}
		return "", cop.Fail(kind, s.uploadError(fmt.Errorf("the commit (Put Block List of %d blocks): %w", len(s.ids), cause), true))
	}
	if resp.ETag == nil || *resp.ETag == "" {
		return "", cop.Fail(nil, errors.New("the commit's response carried no ETag"))
	}
	return driver.Version(*resp.ETag), nil
}

// discarded explains a commit refused with InvalidBlockList: its blocks
// are gone, which happens when another upload (or Put Blob) committed the
// blob after they were staged, or when the blob was deleted. Where the
// blob as it is now breaks cond, the commit would have been refused
// anyway, and that is ErrPrecondition; otherwise the error says so.
func (s *stager) discarded(ctx context.Context, cond driver.Condition, cause error) (error, error) {
	cause = fmt.Errorf("%w: the staged blocks were discarded, which the service does when the blob is committed "+
		"by another writer (or deleted) after they were staged", cause)
	if cond.Unconditional() {
		return nil, cause
	}
	props, err := s.bb.GetProperties(ctx, nil)
	v, match := cond.Match()
	switch {
	case err == nil && cond.Absent():
		return driver.ErrPrecondition, fmt.Errorf("%w; the blob exists now", cause)
	case err == nil && match && (props.ETag == nil || driver.Version(*props.ETag) != v):
		return driver.ErrPrecondition, fmt.Errorf("%w; the blob's version is not the one the condition names", cause)
	case err != nil && match && bloberror.HasCode(err, bloberror.BlobNotFound):
		return driver.ErrPrecondition, fmt.Errorf("%w; the blob does not exist now", cause)
	}
	return nil, cause
}

// List yields the blobs whose names start with prefix, in lexical order,
// through the container's ListBlobsFlat pager, 1,000 to a page. Only
// committed blobs are listed. Each Object's Version is the blob's ETag,
// quoted as Get returns it, and its ModTime the blob's Last-Modified
// time. A missing container is ErrBucketNotExist; refused credentials are
// ErrPermission.
func (b *Bucket) List(ctx context.Context, prefix string) iter.Seq2[driver.Object, error] {
	return func(yield func(driver.Object, error) bool) {
		fail := func(kind, err error) {
			err = shorten(err)
			yield(driver.Object{}, &driver.OpError{Driver: driverName, Op: string(driver.OpList), Key: prefix,
				Kind: kind, Err: driver.WithContext(ctx, err)})
		}
		if err := ctx.Err(); err != nil {
			fail(nil, err)
			return
		}
		o := &container.ListBlobsFlatOptions{MaxResults: to.Ptr(int32(listPage))}
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
				obj := driver.Object{Key: *item.Name, Version: quoted(string(*p.ETag))}
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
	}
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
