package s3proto

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"maps"
	"net/http/httptrace"
	"slices"
	"strings"
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
	// Pending yields the uploads of the key not yet completed or aborted
	// (ListMultipartUploads with the key as the prefix; Run keeps those
	// whose key is exactly the key).
	Pending(ctx context.Context) iter.Seq2[driver.Pending, error]
	// HasParts reports whether any part of the upload has been uploaded
	// (ListParts).
	HasParts(ctx context.Context, upload string) (bool, error)
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

// createSkew is how far the service's clock may be from this machine's
// for the sweep after an unanswered CreateMultipartUpload to find the
// uploads it began (see sweep).
const createSkew = 5 * time.Second

// sweepPatience is about how long the sweep tries to list the key's
// uploads again when the listing fails (within abortTimeout). A variable
// only so that tests can shorten it.
var sweepPatience = 8 * time.Second

// Run reads r in parts of opts.Size() bytes, at most opts.Parallel() of
// them held or in flight at once. A body that fits one part is one
// conditional PUT (Single); a longer one is a multipart upload whose
// CompleteMultipartUpload carries the condition. opts.Allow is called before
// each part and before the commit. On any failure the upload is aborted
// before Run returns, every part's request has returned, and the error's
// *driver.UploadError says whether the abort succeeded.
//
// A CreateMultipartUpload that got no answer (a lost reply, a request
// cancelled in flight) may still have begun an upload, and one the SDK
// sent more than once may have begun one per attempt; the driver never
// learns their IDs. Run then sweeps the key before it returns: it lists
// the key's pending uploads and aborts those that such a creation can
// have begun (see sweep), so that a write that returned leaves nothing
// staged, whatever it returned.
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
	created := time.Now()
	cctx, sent := countRequests(uctx)
	id, err := u.Multipart.Create(cctx)
	answered := time.Now()
	// unanswered: the creation may have begun uploads of the key that the
	// driver does not know of. A refusal of the one request sent began
	// nothing; a request without an answer, or more than one, may have.
	unanswered := sent() > 1 || err != nil && sent() == 1 && u.Kind(err, driver.Condition{}) == nil
	swept := func(ue *driver.UploadError) *driver.UploadError {
		if unanswered {
			aborted, serr := u.sweep(ctx, created, answered, id)
			noteSweep(ue, aborted, serr)
		}
		return ue
	}
	if err != nil {
		return "", op.Fail(u.Kind(err, driver.Condition{}),
			swept(&driver.UploadError{Err: fmt.Errorf("starting the multipart upload: %w", err)}))
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
				if unanswered {
					// The write is committed whatever the sweep finds;
					// what it cannot abort is left to the service's
					// clean-up, as after a killed process.
					_, _ = u.sweep(ctx, created, answered, id)
				}
				if v == "" {
					return "", cop.Fail(nil, errors.New("the service returned no ETag for the completed upload"))
				}
				return v, nil
			}
			kind := u.Kind(err, u.Cond)
			ue := swept(u.abort(ctx, id, fmt.Errorf("completing the multipart upload: %w", err)))
			if kind == nil {
				// No answer that says what the service did: the commit
				// may have landed, and the abort cannot tell (S3 forgets
				// an upload once it is completed or aborted alike).
				ue.Err = fmt.Errorf("completing the multipart upload failed without an answer that says whether it was committed (read the object back): %w", err)
				ue.Aborted, ue.MayHaveCommitted = false, true
				kind = driver.ErrOutcomeUnknown
			}
			return "", cop.Fail(kind, ue)
		}
	}
	return "", op.Fail(failKind, swept(u.abort(ctx, id, firstErr)))
}

// noteSweep adds to ue what the sweep after an unanswered
// CreateMultipartUpload aborted, and why it failed.
func noteSweep(ue *driver.UploadError, aborted []string, err error) {
	if len(aborted) > 0 {
		found := "multipart upload " + strings.Join(aborted, ", ") + " (begun by a CreateMultipartUpload whose answer never came, found by listing the key's uploads)"
		if ue.Staged {
			ue.Upload += ", and " + found
		} else {
			ue.Staged, ue.Aborted, ue.Upload = true, true, found
		}
	}
	if err != nil {
		if ue.Upload == "" {
			ue.Upload = "any multipart upload the CreateMultipartUpload whose answer never came began"
		} else {
			ue.Upload += ", and any other the CreateMultipartUpload whose answer never came began"
		}
		ue.Staged, ue.Aborted = true, false
		ue.AbortErr = errors.Join(ue.AbortErr, fmt.Errorf("looking for uploads a CreateMultipartUpload without an answer began: %w", err))
	}
}

// countRequests returns ctx with an HTTP client trace that counts the
// requests started with it, and a func that returns the count.
func countRequests(ctx context.Context) (context.Context, func() int) {
	var (
		mu sync.Mutex
		n  int
	)
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GetConn: func(string) {
		mu.Lock()
		n++
		mu.Unlock()
	}})
	return ctx, func() int {
		mu.Lock()
		defer mu.Unlock()
		return n
	}
}

// sweep aborts the uploads of the key that a CreateMultipartUpload sent
// from created until answered may have begun without the driver learning
// their IDs, and returns the IDs it aborted. It lists the key's pending
// uploads and aborts each that
//
//   - is not known, the one whose ID Create returned,
//   - was begun from created-createSkew to answered+createSkew by the
//     service's clock, and
//   - has no part: nobody can have uploaded a part to an upload whose ID
//     only the service knows.
//
// An upload that another writer of the same key began within those
// seconds and has not yet sent a part to is aborted too; that writer's
// next part or commit then fails (NoSuchUpload), and nothing is committed
// by it, so the cost is a retry, never a lost or overwritten object.
// A creation given up on in flight may still reach the service seconds
// later, so the key is listed at once and again, up to sweepRounds more
// times, until sweepLate after the answer was given up on: a failed write
// whose creation got no answer returns that much later, and only then.
// What it cannot find is left to the service's clean-up, as after a killed
// process: a request that reaches the service more than createSkew after
// its answer was given up on, or one on a service whose clock is further
// off than that. It is sent whatever state ctx is in, within abortTimeout.
func (u Upload) sweep(ctx context.Context, created, answered time.Time, known string) ([]string, error) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
	defer cancel()
	from, until := created.Add(-createSkew), answered.Add(createSkew)
	var candidates []string
	list := func() error {
		candidates = candidates[:0]
		for p, err := range u.Multipart.Pending(sctx) {
			if err != nil {
				return err
			}
			if p.Key == u.Key && p.Upload != known && !p.Initiated.Before(from) && !p.Initiated.After(until) {
				candidates = append(candidates, p.Upload)
			}
		}
		return nil
	}
	// The creation got no answer, so the listing's answer may be lost
	// too: it is tried again, beyond the SDK's own retries, for about
	// sweepPatience (a dropped connection, a partition that heals).
	listPatiently := func() error {
		err := list()
		for wait := sweepPatience / 16; err != nil && wait <= sweepPatience/2; wait *= 2 {
			select {
			case <-time.After(wait):
			case <-sctx.Done():
				return fmt.Errorf("listing the key's pending uploads: %w", err)
			}
			err = list()
		}
		if err != nil {
			return fmt.Errorf("listing the key's pending uploads: %w", err)
		}
		return nil
	}
	// A creation given up on in flight may reach the service, and begin
	// its upload, seconds later (it was seen 1.8 s after the client had
	// given up): the key is listed again until sweepLate after the answer
	// was given up on, a bounded number of times, and each upload found
	// is judged once.
	var (
		aborted []string
		failed  = map[string]error{}
		judged  = map[string]bool{}
		late    = answered.Add(sweepLate)
	)
	for round := 0; round <= sweepRounds; round++ {
		if err := listPatiently(); err != nil {
			return aborted, errors.Join(append(mapErrs(failed), err)...)
		}
		for _, id := range candidates {
			if judged[id] {
				continue
			}
			has, err := u.Multipart.HasParts(sctx, id)
			if err != nil {
				failed[id] = fmt.Errorf("listing the parts of multipart upload %s: %w", id, err)
				continue
			}
			if has {
				judged[id] = true
				delete(failed, id)
				continue
			}
			if err := u.Multipart.Abort(sctx, id); err != nil {
				failed[id] = fmt.Errorf("AbortMultipartUpload of %s: %w", id, err)
				continue
			}
			judged[id] = true
			delete(failed, id)
			aborted = append(aborted, id)
		}
		left := time.Until(late)
		if left <= 0 || round == sweepRounds {
			break
		}
		select {
		case <-time.After(min(left, sweepLate/sweepRounds)):
		case <-sctx.Done():
			return aborted, errors.Join(append(mapErrs(failed), fmt.Errorf("looking again for uploads begun late: %w", sctx.Err()))...)
		}
	}
	return aborted, errors.Join(mapErrs(failed)...)
}

// sweepLate is how long after an unanswered CreateMultipartUpload was
// given up on the sweep keeps looking for the upload it may begin, and
// sweepRounds how many times at most it lists the key again in that time.
// A variable only so that tests can shorten it.
var sweepLate = createSkew

const sweepRounds = 5

// mapErrs returns the errors of m in the order of their keys.
func mapErrs(m map[string]error) []error {
	ids := slices.Sorted(maps.Keys(m))
	errs := make([]error, 0, len(ids))
	for _, id := range ids {
		errs = append(errs, m[id])
	}
	return errs
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
