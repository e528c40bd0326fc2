package driver

import (
	"context"
	"fmt"
	"io"
	"iter"
	"strings"
	"time"
	"unicode/utf8"
)

// A reader, not a writer, is the shape: the call returns only when the
// object is committed or the upload is aborted, so that whoever waits for
// the call (Lease.Release does) knows that nothing of it is still in flight.

// Default part size and concurrency of a streamed write.
const (
	DefaultPartSize    = 16 << 20
	DefaultConcurrency = 4
	// MinPartSize is the smallest part size a driver must accept: S3's
	// minimum for every part but the last.
	MinPartSize = 5 << 20
)

// StreamOptions tune a streamed write. The zero value (or nil) means
// DefaultPartSize and DefaultConcurrency, with no gate.
type StreamOptions struct {
	// PartSize is the size of each part (S3 multipart part, Azure block,
	// GCS resumable chunk) and of each read from the body. It is raised to
	// MinPartSize if smaller. Default DefaultPartSize.
	PartSize int64

	// Concurrency is how many parts are uploaded at once. Memory is
	// bounded by PartSize × Concurrency. Default DefaultConcurrency.
	Concurrency int

	// MayStart, if set, is called before each request of the upload is
	// started (each part, and the commit that makes the object visible).
	// If it returns an error, nothing more is sent, the upload is aborted,
	// and PutStream returns an error wrapping it. Lease.Bucket sets it to
	// its fence, so that no part and no commit starts once the holder may
	// not write.
	MayStart func() error
}

// Size returns the part size in effect.
func (o *StreamOptions) Size() int64 {
	if o == nil || o.PartSize <= 0 {
		return DefaultPartSize
	}
	return max(o.PartSize, MinPartSize)
}

// Parallel returns the concurrency in effect.
func (o *StreamOptions) Parallel() int {
	if o == nil || o.Concurrency <= 0 {
		return DefaultConcurrency
	}
	return o.Concurrency
}

// Allow calls MayStart if it is set.
func (o *StreamOptions) Allow() error {
	if o == nil || o.MayStart == nil {
		return nil
	}
	return o.MayStart()
}

// PutWhole is the PutStream of a driver whose service cannot stage parts:
// it reads at most s.Size() × s.Parallel() bytes of r and stores them with
// one b.Put under opts. A longer body is an error wrapping ErrUnsupported,
// with nothing written.
func PutWhole(ctx context.Context, b Bucket, key string, r io.Reader, opts PutOptions, s *StreamOptions) (Attrs, error) {
	limit := s.Size() * int64(s.Parallel())
	data, err := io.ReadAll(io.LimitReader(contextReader{ctx, r}, limit+1))
	if err != nil {
		return Attrs{}, &OpError{Op: "put", Key: key, Cond: opts.If, Err: fmt.Errorf("reading the body: %w", err)}
	}
	if int64(len(data)) > limit {
		return Attrs{}, &OpError{Op: "put", Key: key, Cond: opts.If, Kind: ErrUnsupported,
			Err: fmt.Errorf("the driver cannot stream, and the body is longer than %d bytes (part size × concurrency), the most one Put is given here; nothing was written", limit)}
	}
	if err := s.Allow(); err != nil {
		return Attrs{}, &OpError{Op: "put", Key: key, Cond: opts.If, Err: fmt.Errorf("refused to start: %w", err)}
	}
	return b.Put(ctx, key, data, opts)
}

// contextReader stops reading once ctx ends.
type contextReader struct {
	ctx context.Context
	r   io.Reader
}

func (c contextReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, context.Cause(c.ctx)
	}
	return c.r.Read(p)
}

// Object describes one stored object, as List reports it.
type Object struct {
	Key     string    // the full key in the bucket
	Size    int64     // in bytes
	Version Version   // the version a condition would name
	ModTime time.Time // when the service last wrote it
	// Metadata is the object's user metadata, with lowercase keys, where
	// the driver declares Capabilities.ListMetadata: an empty, non-nil
	// Metadata for an object stored with none. It is nil where the driver
	// does not list metadata (S3's listing does not carry it; read the
	// object with Get under GetOptions.Metadata): nil means "not listed",
	// empty means "none".
	Metadata Metadata
}

// UploadError is the cause inside the *OpError of a streamed write that
// failed: why it failed, and what became of what it had staged (an S3
// multipart upload, a GCS resumable session, the file driver's temporary
// file), so that the caller knows whether anything is left behind.
type UploadError struct {
	// Err is why the write failed: the context, the reader, MayStart, a
	// part, or the commit (a refused condition included).
	Err error
	// Staged reports whether anything had been staged when it failed.
	Staged bool
	// Aborted reports whether what was staged was removed before the call
	// returned. It is false when nothing was staged.
	Aborted bool
	// AbortErr is why the abort failed, when Staged and not Aborted. What
	// is left is removed by the service's own clean-up: on S3 a lifecycle
	// rule with AbortIncompleteMultipartUpload. It is nil, with Staged
	// and not Aborted, where the driver has no call that removes what was
	// staged, so no abort was sent: Azure's uncommitted blocks (Blob
	// Storage discards them 7 days after the blob's last Put Block, or
	// when the blob is next committed) and a GCS resumable session (the
	// client library cancels its requests but does not expose the session
	// to delete it; Cloud Storage discards it 7 days after it started).
	// Upload then says what becomes of it.
	AbortErr error
	// Upload names what was staged (an upload ID, a temporary file), if
	// anything was; where no abort could be sent, with what becomes of
	// it.
	Upload string
	// MayHaveCommitted reports that the commit was sent and no answer
	// said what the service did with it (a lost reply): the object may
	// have been committed, whatever the abort sent after it returned (S3
	// forgets an upload once it is completed or aborted alike, so an
	// abort that "succeeds" proves nothing). Aborted is then false; read
	// the object back to know.
	MayHaveCommitted bool
}

// Error says why the write failed and what became of the staged upload.
func (e *UploadError) Error() string {
	msg := "<nil>"
	if e.Err != nil {
		msg = e.Err.Error()
	}
	switch {
	case e.MayHaveCommitted:
		return msg + "; its commit (of " + e.Upload + ") got no answer, so the object may have been committed, whatever the abort sent after it returned: read the object back"
	case !e.Staged:
		return msg + "; nothing had been staged"
	case e.Aborted:
		return msg + "; what it had staged (" + e.Upload + ") was aborted"
	case e.AbortErr != nil:
		return msg + "; aborting what it had staged (" + e.Upload + ") failed too (" + e.AbortErr.Error() +
			"), so it is left to the service's clean-up (see UploadError.AbortErr)"
	default:
		return msg + "; no abort was sent, the driver having no call that removes what it had staged: " + e.Upload
	}
}

// Unwrap returns the cause and the abort's error.
func (e *UploadError) Unwrap() []error {
	var errs []error
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	if e.AbortErr != nil {
		errs = append(errs, e.AbortErr)
	}
	return errs
}

// Pending is one staged upload not yet committed or aborted (an S3
// multipart upload), as PendingLister reports it.
type Pending struct {
	Key       string    // the key it would be committed under
	Upload    string    // the service's name for it (an S3 upload ID)
	Initiated time.Time // when it was started, if the service says
	// Abort removes the upload (S3's AbortMultipartUpload, the file
	// driver's staged file), so that it can never be committed; nil where
	// the driver has no call for it. It returns nil when the upload is
	// gone already (completed or aborted), and an error naming the key
	// and the upload otherwise. It decides nothing about whose the upload
	// is: admin.RemovePending (lease/admin) asks the lease first. The file driver's
	// refuses a staged file whose writer is still running (it holds its
	// lock).
	Abort func(ctx context.Context) error
}

// PendingLister is the optional interface of a Bucket whose service can
// list the uploads staged under a prefix and not yet committed or aborted.
// drivertest uses it to prove that a failed streamed write leaves nothing
// behind; bucketlease show and probe can list what a prefix has pending.
type PendingLister interface {
	// ListPending yields the pending uploads whose key starts with prefix,
	// in the service's order. A failure is yielded once, as the error of
	// the last pair.
	ListPending(ctx context.Context, prefix string) iter.Seq2[Pending, error]
}

// ReadPart fills buf from r and reports the bytes read. The error is nil
// when buf was filled with no error from r, io.EOF when r ended cleanly (r
// returned io.EOF itself; n may be > 0, up to len(buf): the last part), and
// r's error otherwise, even when r returned it together with the bytes that
// filled buf, and even when it is io.ErrUnexpectedEOF: a cut HTTP body, a
// gzip or tar stream that ends mid-record say so with it, and such a body
// is not whole. So only r's own
// io.EOF ends a body; every other error is the write's, and the driver
// aborts the upload. A reader that returns no bytes and no error
// maxEmptyReads times in a row fails with io.ErrNoProgress. ctx is looked
// at before every Read. Drivers that stream read each part with it.
func ReadPart(ctx context.Context, r io.Reader, buf []byte) (int, error) {
	n, empty := 0, 0
	for n < len(buf) {
		if err := ctx.Err(); err != nil {
			return n, context.Cause(ctx)
		}
		m, err := r.Read(buf[n:])
		if m < 0 || m > len(buf)-n {
			return n, fmt.Errorf("the body's reader returned an impossible count (%d bytes read into %d)", m, len(buf)-n)
		}
		n += m
		switch {
		case err == io.EOF:
			return n, io.EOF
		case err != nil:
			return n, err
		case m == 0:
			if empty++; empty >= maxEmptyReads {
				return n, io.ErrNoProgress
			}
		default:
			empty = 0
		}
	}
	return n, nil
}

// maxEmptyReads is how many reads in a row that return nothing and no
// error ReadPart waits through (as bufio does).
const maxEmptyReads = 100

// Listing is the iterator a driver's List or ListPending returns: it
// starts the listing with BeginList and, if that fails, yields its error
// alone; otherwise it runs list, which yields the listing's entries and
// builds each error with op.Fail.
func Listing[T any](ctx context.Context, driverName, prefix string, list func(op *Op, yield func(T, error) bool)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		op, err := BeginList(ctx, driverName, prefix)
		if err != nil {
			var zero T
			yield(zero, err)
			return
		}
		list(op, yield)
	}
}

// BeginList starts a List (or ListPending) of prefix, as Begin starts the
// other operations: it returns the error to yield at once if ctx has ended
// or the prefix could match no valid key (longer than MaxKeyLen, not
// UTF-8, a control character, a backslash, U+FFFE or U+FFFF), and
// otherwise an *Op whose Fail builds every error of the listing. Unlike a
// key, a prefix may be empty (the whole bucket) and may end in a slash or
// mid-segment.
func BeginList(ctx context.Context, driverName, prefix string) (*Op, error) {
	o := &Op{Driver: driverName, Name: string(OpList), Key: prefix, ctx: ctx, sent: &sentCount{}}
	if err := ctx.Err(); err != nil {
		return o, o.Fail(nil, err)
	}
	why := ""
	switch {
	case len(prefix) > MaxKeyLen:
		why = fmt.Sprintf("it is %d bytes long, more than a key may be (%d)", len(prefix), MaxKeyLen)
	case !utf8.ValidString(prefix):
		why = "it is not valid UTF-8"
	case strings.ContainsFunc(prefix, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\\' || r == 0xfffe || r == 0xffff }):
		why = "it contains a control character, a backslash, U+FFFE or U+FFFF, which no key may"
	}
	if why != "" {
		return o, o.Fail(ErrInvalidKey, fmt.Errorf("prefix %q matches no valid key: %s", clipKey(prefix), why))
	}
	return o, nil
}
