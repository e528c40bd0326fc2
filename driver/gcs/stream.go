package gcs

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"iter"
	"net/http"
	"time"

	"cloud.google.com/go/auth"
	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/internal/metadata"
	"github.com/mushroomdb/bucketlease/driver/multipart"
)

var (
	_ driver.Bucket = (*Bucket)(nil)
	_ io.Closer     = (*Bucket)(nil)
)

const (
	// chunkAlign is the granule of a resumable upload's chunks: every
	// chunk but the last is a multiple of 256 KiB (googleapi.MinUploadChunkSize).
	chunkAlign = googleapi.MinUploadChunkSize
	// handOver is how much of the body PutStream reads from the caller's
	// reader and hands to the client library at a time.
	handOver = 256 << 10
	// listPage is the page size List asks for: Cloud Storage's maximum,
	// set explicitly so that an emulator pages the same way.
	listPage = 1000
)

// chunkSize is the part size rounded down to 256 KiB, less one granule
// where the chunk and the piece handed over would exceed opts' memory.
func chunkSize(opts *driver.StreamOptions) int64 {
	size := opts.Size() / chunkAlign * chunkAlign
	if size+handOver > opts.Size()*int64(opts.Parallel()) {
		size -= chunkAlign
	}
	return size
}

// PutStream stores the body read from r, with opts.Metadata, under key if
// opts.If holds when the upload is finalised, and returns the new
// generation. A body shorter than one chunk is one conditional request; a
// longer one is a resumable upload started with the precondition, which
// Cloud Storage checks again at finalisation, so nothing is visible before
// it. Chunks are sent one after another (opts.Parallel only bounds memory),
// opts.Allow is called before each request, and on any failure the session
// is abandoned, never finalised; only a final request that fails in flight
// may have landed. The finalised object's length and CRC32C are checked and
// a mismatched generation removed, so the write leaves the whole body or
// nothing. docs/drivers.md ("Streaming writes" under gs://) has the
// details.
func (b *Bucket) PutStream(ctx context.Context, key string, r io.Reader, po driver.PutOptions, opts *driver.StreamOptions) (driver.Attrs, error) {
	op, err := driver.BeginPut(ctx, b.Capabilities(), driverName, key, po)
	if err != nil {
		return driver.Attrs{}, err
	}
	obj, err := b.object(b.bkt, key, po.If)
	if err != nil {
		return driver.Attrs{}, op.Fail(driver.ErrPrecondition, err)
	}
	u := &upload{b: b, ctx: ctx, key: key, cond: po.If, meta: op.Metadata, obj: obj, chunk: chunkSize(opts)}
	return multipart.Stream(op, r, opts, multipart.Parts{Size: u.chunk, Piece: handOver}, u)
}

// upload is the multipart.UploadSteps of one streamed write: the client
// library's Writer, handed the body a piece at a time (multipart.Parts.Piece),
// which buffers a chunk and sends it once it holds it whole.
type upload struct {
	b     *Bucket
	ctx   context.Context
	key   string
	cond  driver.Condition
	meta  driver.Metadata // sent with the object
	obj   *storage.ObjectHandle
	chunk int64

	wop     *driver.Op // counts the Writer's requests
	w       *storage.Writer
	cancel  context.CancelFunc
	written int64  // bytes handed to w
	sum     uint32 // their CRC32C
	closed  bool   // w.Close was called
	final   bool   // w.Close failed: the final request may have been sent
	// wrong says what became of an object the service finalised with
	// other bytes than were sent (Commit); "" if none was.
	wrong string
}

// Start makes the Writer, which sends nothing until it holds a chunk or is
// closed. Its context must outlive Close; cancelling it aborts the upload.
func (u *upload) Start(ctx context.Context) error {
	u.wop, _ = driver.BeginPut(ctx, u.b.Capabilities(), driverName, u.key, driver.PutOptions{If: u.cond})
	wctx, cancel := context.WithCancel(u.wop.Context())
	u.w, u.cancel = u.obj.NewWriter(wctx), cancel
	u.w.ChunkSize = int(u.chunk)
	u.w.ContentType = "application/octet-stream"
	// Sent with the request that starts the session, and given to the
	// object by the final request that makes it visible.
	u.w.Metadata = u.meta
	return nil
}

// StagePart hands a piece of chunk n to the Writer. The piece that
// completes a chunk makes the client library send it; it is reading this
// chunk already (it took the earlier pieces), so its previous request has
// ended.
func (u *upload) StagePart(_ context.Context, _ int, piece []byte) error {
	if _, err := u.w.Write(piece); err != nil {
		return err
	}
	u.written += int64(len(piece))
	u.sum = crc32.Update(u.sum, castagnoli, piece)
	return nil
}

// Drain waits, where the body ended on a chunk boundary, for the last
// chunk's request: a write of no bytes returns once the client library
// reads again, that is once that request has ended, so that MayStart is
// asked right before the final request (which carries no bytes).
func (u *upload) Drain(context.Context) error {
	if u.written > 0 && u.written%u.chunk == 0 {
		_, err := u.w.Write(nil)
		return err
	}
	return nil
}

// Commit closes the Writer, which sends the final request (or the one
// request of a short body).
func (u *upload) Commit(context.Context, int) (driver.Version, error) {
	u.closed = true
	if err := u.w.Close(); err != nil {
		u.cancel()
		u.final = true
		what := "the final request"
		if !u.resumable() {
			what = "the upload request"
		}
		return "", fmt.Errorf("%s: %w", what, err)
	}
	attrs := u.w.Attrs()
	if attrs == nil || attrs.Generation <= 0 {
		return "", nil // no generation, which StreamParts reports
	}
	if err := u.verify(attrs); err != nil {
		return "", err
	}
	return version(attrs.Generation), nil
}

// verify checks the finalised object's length and CRC32C against what was
// sent: a service that appends a resent chunk (fake-gcs-server) finalises
// a longer object. Such a generation is removed and the write fails; if
// the removal fails too, the error says the object is there and wrong.
func (u *upload) verify(attrs *storage.ObjectAttrs) error {
	if attrs.Size == u.written && (attrs.CRC32C == 0 || attrs.CRC32C == u.sum) {
		return nil
	}
	what := fmt.Errorf("the service finalised generation %d with %d bytes (CRC32C %08x) where %d bytes (CRC32C %08x) were sent: %w",
		attrs.Generation, attrs.Size, attrs.CRC32C, u.written, u.sum, errWrongObject)
	dctx, cancel := context.WithTimeout(context.WithoutCancel(u.ctx), removeTimeout)
	defer cancel()
	if err := u.b.bkt.Object(u.key).If(storage.Conditions{GenerationMatch: attrs.Generation}).Delete(dctx); err != nil &&
		!errors.Is(err, storage.ErrObjectNotExist) {
		u.wrong = fmt.Sprintf("that object could not be removed (%v): it is there and wrong; delete generation %d by hand", err, attrs.Generation)
		return what
	}
	u.wrong = "that object was removed: nothing is left"
	return what
}

// errWrongObject: the service finalised an object that differs from the
// body sent (verify).
var errWrongObject = errors.New("the stored object is not the body that was sent")

// removeTimeout bounds verify's removal of a wrong object.
const removeTimeout = 30 * time.Second

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// resumable reports whether the write is a resumable upload: the client
// library starts a session once a whole chunk has been handed over, and
// sends a shorter body in one request.
func (u *upload) resumable() bool { return u.written >= u.chunk }

// Abort cancels the Writer's requests and waits for the client library's
// upload to end. No abort is sent (Leftover.Err stays nil): the session
// cannot be deleted, so the Leftover says what becomes of it.
func (u *upload) Abort(context.Context, bool) multipart.Leftover {
	u.cancel()
	if !u.closed {
		u.closed = true
		_ = u.w.Close()
	}
	switch {
	case u.wrong != "":
		return multipart.Leftover{Upload: u.wrong}
	case !u.resumable():
		return multipart.Leftover{}
	case u.final:
		return multipart.Leftover{Upload: finalFailed}
	}
	return multipart.Leftover{Upload: abandoned}
}

// abandoned and finalFailed are UploadError.Upload of a resumable upload
// that failed before its final request, and at it.
const (
	sessionExpiry = "Cloud Storage discards it, with the chunks it received, 7 days after it started " +
		"(the client library cancels the session's requests but does not expose the session's URI to delete it)"
	abandoned = "nothing was committed; the resumable session's requests were cancelled before its final one, " +
		"and " + sessionExpiry
	finalFailed = "the resumable session's final request failed; unless it landed, the session is left unfinalised, " +
		"and " + sessionExpiry
)

// Kind maps a failed request of the upload to the contract's kinds. In a
// resumable upload only a 412 is a refusal (a 404 is a gone session:
// unknown); a retried single request's refusal may be its own earlier
// attempt's doing, so it is unknown too.
func (u *upload) Kind(err error, commit bool) error {
	if errors.Is(err, errWrongObject) {
		return nil // the service answered: what it stored, and what became of it, is known
	}
	kind := u.b.classify(u.ctx, err, u.cond)
	var ge *googleapi.Error
	if commit && u.resumable() && kind != driver.ErrBucketNotExist && errors.As(err, &ge) && ge.Code == http.StatusNotFound {
		return driver.ErrOutcomeUnknown // the session is gone: perhaps finalised by an attempt whose reply was lost
	}
	if kind == driver.ErrNotExist {
		return nil
	}
	if kind == driver.ErrPrecondition && (u.resumable() && !(errors.As(err, &ge) && ge.Code == http.StatusPreconditionFailed) ||
		!u.resumable() && u.wop.Attempts() > 1) {
		return driver.ErrOutcomeUnknown
	}
	return kind
}

// List yields the objects whose names start with prefix, in lexical order,
// with their generations as Versions.
func (b *Bucket) List(ctx context.Context, prefix string) iter.Seq2[driver.Object, error] {
	return driver.Listing(ctx, driverName, prefix, func(op *driver.Op, yield func(driver.Object, error) bool) {
		fail := func(kind, err error) { yield(driver.Object{}, op.Fail(kind, err)) }
		q := &storage.Query{Prefix: prefix, Projection: storage.ProjectionNoACL}
		if err := q.SetAttrSelection([]string{"Name", "Size", "Generation", "Updated", "Metadata"}); err != nil {
			fail(nil, err)
			return
		}
		it := b.bkt.Objects(ctx, q)
		it.PageInfo().MaxSize = listPage
		for {
			attrs, err := it.Next()
			if errors.Is(err, iterator.Done) {
				return
			}
			if err != nil {
				fail(listKind(err), err)
				return
			}
			if attrs.Generation <= 0 {
				fail(nil, fmt.Errorf("the listing of %q carried no generation", attrs.Name))
				return
			}
			o := driver.Object{Key: attrs.Name, Size: attrs.Size, Version: version(attrs.Generation), ModTime: attrs.Updated,
				Metadata: metadata.Lower(attrs.Metadata)}
			if !yield(o, nil) {
				return
			}
		}
	})
}

// listKind classifies a failed listing: a missing bucket (the client
// library reports a 404 as storage.ErrBucketNotExist), and refused
// credentials.
func listKind(err error) error {
	var ae *auth.Error
	var ge *googleapi.Error
	switch {
	case errors.As(err, &ae):
		return driver.ErrPermission
	case errors.As(err, &ge) && (ge.Code == http.StatusUnauthorized || ge.Code == http.StatusForbidden):
		return driver.ErrPermission
	case errors.Is(err, storage.ErrBucketNotExist), errors.As(err, &ge) && ge.Code == http.StatusNotFound:
		return driver.ErrBucketNotExist
	}
	return nil
}
