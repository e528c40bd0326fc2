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

// The part size and concurrency of a streamed write that sets none:
// 16 MiB and 4.
const (
	defaultPartSize    = 16 << 20
	defaultConcurrency = 4
	// MinPartSize is the smallest part size a driver must accept: S3's
	// minimum for every part but the last.
	MinPartSize = 5 << 20
)

// StreamOptions tune a streamed write. The zero value (or nil) means parts
// of 16 MiB, 4 at once, with no gate.
type StreamOptions struct {
	// PartSize is the size of each part (S3 multipart part, Azure block,
	// GCS resumable chunk) and of each read from the body. It is raised to
	// MinPartSize if smaller. Default 16 MiB.
	PartSize int64

	// Concurrency is how many parts are uploaded at once. Memory is
	// bounded by PartSize × Concurrency. Default 4.
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
		return defaultPartSize
	}
	return max(o.PartSize, MinPartSize)
}

// Parallel returns the concurrency in effect.
func (o *StreamOptions) Parallel() int {
	if o == nil || o.Concurrency <= 0 {
		return defaultConcurrency
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

// Listing is the iterator a driver's List or ListPending returns: it
// starts the listing with beginList and, if that fails, yields its error
// alone; otherwise it runs list, which yields the listing's entries and
// builds each error with op.Fail.
func Listing[T any](ctx context.Context, driverName, prefix string, list func(op *Op, yield func(T, error) bool)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		op, err := beginList(ctx, driverName, prefix)
		if err != nil {
			var zero T
			yield(zero, err)
			return
		}
		list(op, yield)
	}
}

// beginList starts a List (or ListPending) of prefix, as begin starts the
// other operations: it returns the error to yield at once if ctx has ended
// or the prefix could match no valid key (longer than maxKeyLen, not
// UTF-8, a control character, a backslash, U+FFFE or U+FFFF), and
// otherwise an *Op whose Fail builds every error of the listing. Unlike a
// key, a prefix may be empty (the whole bucket) and may end in a slash or
// mid-segment.
func beginList(ctx context.Context, driverName, prefix string) (*Op, error) {
	o := &Op{driver: driverName, name: string(opList), key: prefix, ctx: ctx, sent: &sentCount{}}
	if err := ctx.Err(); err != nil {
		return o, o.Fail(nil, err)
	}
	why := ""
	switch {
	case len(prefix) > maxKeyLen:
		why = fmt.Sprintf("it is %d bytes long, more than a key may be (%d)", len(prefix), maxKeyLen)
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
