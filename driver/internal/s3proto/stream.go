package s3proto

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
)

// Part is one uploaded part of a multipart upload.
type Part struct {
	Number int
	ETag   string
	// Checksum is the part's CRC32 as the service reported it, where the
	// driver asked for one (AWS S3 wants it back in the completed parts
	// of an upload created with a checksum algorithm); "" otherwise.
	Checksum string
}

// Multipart is one SDK's calls for an S3 multipart upload of one key. Each
// returns the SDK's error as it is; Upload classifies and wraps it.
type Multipart interface {
	// Create starts the upload and returns its upload ID.
	Create(ctx context.Context) (string, error)
	// Part uploads part n (from 1) and returns its ETag and, where the
	// driver asked for one, its checksum.
	Part(ctx context.Context, upload string, n int, data []byte) (etag, checksum string, err error)
	// Complete commits the parts under the condition (If-None-Match: * or
	// If-Match on CompleteMultipartUpload) and returns the object's
	// version in the form Get returns it.
	Complete(ctx context.Context, upload string, parts []Part) (driver.Version, error)
	// Abort aborts the upload.
	Abort(ctx context.Context, upload string) error
}

// Upload is a streamed conditional write of one key to an S3-compatible
// service: the part of driver.Streamer that the s3 and minio drivers share.
type Upload struct {
	Caps   driver.Capabilities
	Driver string
	Key    string
	Cond   driver.Condition
	// Single writes a body that fits one part with one conditional PUT
	// (the driver's Put).
	Single func(ctx context.Context, data []byte) (driver.Version, error)
	// Multipart makes the calls of a larger body.
	Multipart Multipart
	// Kind classifies an SDK error for a request under a condition.
	Kind func(err error, cond driver.Condition) error
}

// abortTimeout bounds the AbortMultipartUpload sent after a failure; it is
// sent even when the caller's context has ended.
const abortTimeout = 30 * time.Second

// Run reads r in parts of opts.Size() bytes, at most opts.Parallel() of
// them held or in flight at once. A body that fits one part is one
// conditional PUT (Single); a longer one is a multipart upload whose
// CompleteMultipartUpload carries the condition. opts.Allow is called before
// each part and before the commit. On any failure the upload is aborted
// before Run returns, every part's request has returned, and the error's
// *driver.UploadError says whether the abort succeeded.
func (u Upload) Run(ctx context.Context, r io.Reader, opts *driver.StreamOptions) (driver.Version, error) {
	op, err := driver.Begin(ctx, u.Caps, u.Driver, driver.OpPut, u.Key, u.Cond)
	if err != nil {
		return "", err
	}
	size, par := opts.Size(), opts.Parallel()
	src := &partSource{r: r}
	buf := make([]byte, size)
	n, last, err := src.next(ctx, buf)
	if err != nil {
		return "", op.Fail(nil, &driver.UploadError{Err: fmt.Errorf("reading the body: %w", err)})
	}
	if last {
		if err := opts.Allow(); err != nil {
			return "", op.Fail(nil, &driver.UploadError{Err: fmt.Errorf("MayStart refused the write: %w", err)})
		}
		return u.Single(ctx, buf[:n])
	}

	uctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	id, err := u.Multipart.Create(uctx)
	if err != nil {
		return "", op.Fail(u.Kind(err, driver.Condition{}),
			&driver.UploadError{Err: fmt.Errorf("starting the multipart upload: %w", err)})
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		parts    []Part
		firstErr error
		failKind error
	)
	fail := func(kind, e error) {
		mu.Lock()
		defer mu.Unlock()
		if firstErr == nil {
			firstErr, failKind = e, kind
			cancel(e)
		}
	}
	failed := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return firstErr != nil
	}
	free := make(chan []byte, par)
	allocated := 1
	for no := 1; ; no++ {
		if err := opts.Allow(); err != nil {
			fail(nil, fmt.Errorf("MayStart refused part %d: %w", no, err))
			break
		}
		if uctx.Err() != nil || failed() {
			break
		}
		wg.Add(1)
		go func(no int, b []byte, data []byte) {
			defer wg.Done()
			etag, sum, err := u.Multipart.Part(uctx, id, no, data)
			free <- b
			if err != nil {
				fail(u.Kind(err, driver.Condition{}), fmt.Errorf("uploading part %d: %w", no, err))
				return
			}
			mu.Lock()
			parts = append(parts, Part{Number: no, ETag: etag, Checksum: sum})
			mu.Unlock()
		}(no, buf, buf[:n])
		if last {
			break
		}
		select {
		case buf = <-free:
		default:
			if allocated < par {
				buf = make([]byte, size)
				allocated++
			} else {
				select {
				case buf = <-free:
				case <-uctx.Done():
					buf = nil
				}
			}
		}
		if buf == nil {
			break
		}
		if n, last, err = src.next(uctx, buf); err != nil {
			fail(nil, fmt.Errorf("reading the body: %w", err))
			break
		}
	}
	wg.Wait()
	if !failed() && ctx.Err() != nil {
		fail(nil, context.Cause(ctx))
	}
	if !failed() {
		if err := opts.Allow(); err != nil {
			fail(nil, fmt.Errorf("MayStart refused the commit: %w", err))
		}
	}
	if !failed() {
		slices.SortFunc(parts, func(a, b Part) int { return a.Number - b.Number })
		// The commit is its own operation, so that Fail counts its
		// attempts only: a CompleteMultipartUpload the SDK sent twice and
		// whose second attempt was refused is ErrOutcomeUnknown.
		cop, err := driver.Begin(ctx, u.Caps, u.Driver, driver.OpPut, u.Key, u.Cond)
		if err != nil {
			fail(nil, context.Cause(ctx))
		} else {
			v, err := u.Multipart.Complete(cop.Context(), id, parts)
			if err == nil {
				if v == "" {
					return "", cop.Fail(nil, errors.New("the service returned no ETag for the completed upload"))
				}
				return v, nil
			}
			kind := u.Kind(err, u.Cond)
			ue := u.abort(ctx, id, fmt.Errorf("completing the multipart upload: %w", err))
			if kind == nil {
				// No answer that says what the service did: the commit
				// may have landed, and the abort cannot tell (S3 forgets
				// an upload once it is completed or aborted alike).
				ue.Err = fmt.Errorf("completing the multipart upload failed without an answer that says whether it was committed (read the object back): %w", err)
				kind = driver.ErrOutcomeUnknown
			}
			return "", cop.Fail(kind, ue)
		}
	}
	return "", op.Fail(failKind, u.abort(ctx, id, firstErr))
}

// abort aborts the upload, whatever state ctx is in, and returns the
// UploadError for cause.
func (u Upload) abort(ctx context.Context, id string, cause error) *driver.UploadError {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
	defer cancel()
	aerr := u.Multipart.Abort(actx, id)
	ue := &driver.UploadError{Err: cause, Staged: true, Aborted: aerr == nil, Upload: "multipart upload " + id}
	if aerr != nil {
		ue.AbortErr = fmt.Errorf("AbortMultipartUpload: %w", aerr)
	}
	return ue
}

// partSource cuts a reader into parts, looking one byte ahead so that a
// part that ends exactly at the end of the body is known to be the last.
type partSource struct {
	r     io.Reader
	carry []byte
	one   [1]byte
}

// next fills buf and reports how many bytes it holds and whether it is the
// body's last part.
func (s *partSource) next(ctx context.Context, buf []byte) (n int, last bool, err error) {
	n = copy(buf, s.carry)
	s.carry = nil
	m, err := driver.ReadPart(ctx, s.r, buf[n:])
	n += m
	if err == io.EOF {
		return n, true, nil
	}
	if err != nil {
		return n, false, err
	}
	k, err := driver.ReadPart(ctx, s.r, s.one[:])
	if err == io.EOF && k == 0 {
		return n, true, nil
	}
	if err != nil && err != io.EOF {
		return n, false, err
	}
	s.carry = s.one[:k]
	return n, false, nil
}
