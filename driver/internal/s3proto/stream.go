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
	"github.com/mushroomdb/bucketlease/driver/multipart"
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
	// Create starts the upload, with the metadata md the object is to
	// get at its commit, and returns its upload ID.
	Create(ctx context.Context, md driver.Metadata) (string, error)
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
	Pending(ctx context.Context) iter.Seq2[multipart.Pending, error]
	// HasParts reports whether any part of the upload has been uploaded
	// (ListParts).
	HasParts(ctx context.Context, upload string) (bool, error)
}

// Upload is a streamed conditional write of one key to an S3-compatible
// service: the part of a PutStream that the s3 and minio drivers share.
type Upload struct {
	Caps   driver.Capabilities
	Driver string
	Key    string
	// Opts are the write's condition, checked at the commit, and its
	// metadata, sent with CreateMultipartUpload.
	Opts driver.PutOptions
	// Single writes a body that fits one part with one conditional PUT
	// (the driver's Put).
	Single func(ctx context.Context, data []byte) (driver.Version, error)
	// Multipart makes the calls of a larger body.
	Multipart Multipart
	// Kind classifies an SDK error for a request under a condition.
	Kind func(err error, cond driver.Condition) error
}

// abortTimeout bounds the sweep sent after a failure; it is sent even
// when the caller's context has ended.
const abortTimeout = multipart.AbortTimeout

// createSkew is how far the service's clock may be from this machine's
// for the sweep after an unanswered CreateMultipartUpload to find the
// uploads it began (see sweep).
const createSkew = 5 * time.Second

// sweepPatience is about how long the sweep tries to list the key's
// uploads again when the listing fails (within abortTimeout). A variable
// only so that tests can shorten it.
var sweepPatience = 8 * time.Second

// Run streams r through multipart.Stream: a one-part body is one
// conditional PUT (Single), a longer one a multipart upload whose
// CompleteMultipartUpload carries the condition. A failed upload is
// aborted before Run returns. A
// CreateMultipartUpload that got no answer, or was retried, may have begun
// uploads whose IDs the driver never learns; Run then sweeps the key (see
// sweep), so a write that returned leaves nothing staged.
func (u Upload) Run(ctx context.Context, r io.Reader, opts *driver.StreamOptions) (driver.Attrs, error) {
	op, err := driver.BeginPut(ctx, u.Caps, u.Driver, u.Key, u.Opts)
	if err != nil {
		return driver.Attrs{}, err
	}
	return multipart.Stream(op, r, opts, multipart.Parts{}, &steps{u: u, md: op.Metadata})
}

// steps are multipart.UploadSteps of one multipart upload.
type steps struct {
	u  Upload
	md driver.Metadata // what Create sends
	id string          // the upload ID Create returned

	mu    sync.Mutex
	parts []Part

	// created and answered bound when the CreateMultipartUpload was
	// sent; unanswered reports that it may have begun unknown uploads (a
	// request without an answer, or sent more than once).
	created, answered time.Time
	unanswered        bool
}

func (s *steps) Start(ctx context.Context) error {
	s.created = time.Now()
	cctx, sent := countRequests(ctx)
	id, err := s.u.Multipart.Create(cctx, s.md)
	s.answered = time.Now()
	s.unanswered = sent() > 1 || err != nil && sent() == 1 && s.u.Kind(err, driver.Condition{}) == nil
	if err != nil {
		return fmt.Errorf("starting the multipart upload: %w", err)
	}
	s.id = id
	return nil
}

func (s *steps) StagePart(ctx context.Context, n int, data []byte) error {
	etag, sum, err := s.u.Multipart.Part(ctx, s.id, n, data)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.parts = append(s.parts, Part{Number: n, ETag: etag, Checksum: sum})
	return nil
}

func (s *steps) Commit(ctx context.Context, _ int) (driver.Version, error) {
	slices.SortFunc(s.parts, func(a, b Part) int { return a.Number - b.Number })
	v, err := s.u.Multipart.Complete(ctx, s.id, s.parts)
	if err != nil {
		return "", fmt.Errorf("completing the multipart upload: %w", err)
	}
	if s.unanswered {
		// The write is committed whatever the sweep finds; what it cannot
		// abort is left to the service's clean-up, as after a killed
		// process.
		_, _ = s.u.sweep(ctx, s.created, s.answered, s.id)
	}
	return v, nil
}

func (s *steps) Abort(ctx context.Context, _ bool) multipart.Leftover {
	var lo multipart.Leftover
	if s.id != "" {
		lo.Upload = "multipart upload " + s.id
		if err := s.u.Multipart.Abort(ctx, s.id); err != nil {
			lo.Err = fmt.Errorf("AbortMultipartUpload: %w", err)
		} else {
			lo.Aborted = true
		}
	}
	if s.unanswered {
		aborted, err := s.u.sweep(ctx, s.created, s.answered, s.id)
		noteSweep(&lo, aborted, err)
	}
	return lo
}

func (s *steps) Kind(err error, commit bool) error {
	if !commit {
		return s.u.Kind(err, driver.Condition{})
	}
	if kind := s.u.Kind(err, s.u.Opts.If); kind != nil {
		return kind
	}
	// No answer that says what the service did: the commit may have
	// landed.
	return driver.ErrOutcomeUnknown
}

func (s *steps) PutSingle(ctx context.Context, data []byte) (driver.Version, error) {
	return s.u.Single(ctx, data)
}

// noteSweep adds to lo what the sweep after an unanswered
// CreateMultipartUpload aborted, and why it failed.
func noteSweep(lo *multipart.Leftover, aborted []string, err error) {
	if len(aborted) > 0 {
		found := "multipart upload " + strings.Join(aborted, ", ") + " (begun by a CreateMultipartUpload whose answer never came, found by listing the key's uploads)"
		if lo.Upload != "" {
			lo.Upload += ", and " + found
		} else {
			lo.Upload, lo.Aborted = found, true
		}
	}
	if err != nil {
		if lo.Upload == "" {
			lo.Upload = "any multipart upload the CreateMultipartUpload whose answer never came began"
		} else {
			lo.Upload += ", and any other the CreateMultipartUpload whose answer never came began"
		}
		lo.Aborted = false
		lo.Err = errors.Join(lo.Err, fmt.Errorf("looking for uploads a CreateMultipartUpload without an answer began: %w", err))
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
// Another writer's partless upload in that window is aborted too; its next
// part or commit fails (NoSuchUpload), so the cost is a retry, never a lost
// or overwritten object. A creation given up on may reach the service
// later, so the key is listed again, up to sweepRounds more times until
// sweepLate after; what arrives later still, or on a service whose clock
// is off by more than createSkew, is left to the service's clean-up. It
// runs whatever state ctx is in, within abortTimeout.
func (u Upload) sweep(ctx context.Context, created, answered time.Time, known string) ([]string, error) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
	defer cancel()
	from, until := created.Add(-createSkew), answered.Add(createSkew)
	// A creation given up on may begin its upload seconds later (seen at
	// 1.8 s): list again until sweepLate, judging each upload once.
	var (
		aborted []string
		failed  = map[string]error{}
		judged  = map[string]bool{}
		late    = answered.Add(sweepLate)
	)
	for round := 0; round <= sweepRounds; round++ {
		candidates, err := u.listPatiently(sctx, from, until, known)
		if err != nil {
			return aborted, errors.Join(append(mapErrs(failed), err)...)
		}
		aborted = u.judge(sctx, candidates, judged, failed, aborted)
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

// candidates lists the key's pending uploads, other than known, begun
// from from to until by the service's clock.
func (u Upload) candidates(sctx context.Context, from, until time.Time, known string) ([]string, error) {
	var candidates []string
	for p, err := range u.Multipart.Pending(sctx) {
		if err != nil {
			return nil, err
		}
		if p.Key == u.Key && p.Upload != known && !p.Initiated.Before(from) && !p.Initiated.After(until) {
			candidates = append(candidates, p.Upload)
		}
	}
	return candidates, nil
}

// listPatiently is candidates tried again, beyond the SDK's own retries,
// for about sweepPatience (a dropped connection, a partition that heals):
// the creation got no answer, so the listing's answer may be lost too.
func (u Upload) listPatiently(sctx context.Context, from, until time.Time, known string) ([]string, error) {
	candidates, err := u.candidates(sctx, from, until, known)
	for wait := sweepPatience / 16; err != nil && wait <= sweepPatience/2; wait *= 2 {
		select {
		case <-time.After(wait):
		case <-sctx.Done():
			return nil, fmt.Errorf("listing the key's pending uploads: %w", err)
		}
		candidates, err = u.candidates(sctx, from, until, known)
	}
	if err != nil {
		return nil, fmt.Errorf("listing the key's pending uploads: %w", err)
	}
	return candidates, nil
}

// judge aborts each of candidates not judged yet that has no part, and
// returns aborted with those it aborted added. An upload with a part, or
// aborted, is judged for good; one whose parts or abort failed is
// recorded in failed and judged again in the next round.
func (u Upload) judge(sctx context.Context, candidates []string, judged map[string]bool, failed map[string]error, aborted []string) []string {
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
	return aborted
}

// sweepLate is how long the sweep keeps looking for an unanswered
// creation's upload, in at most sweepRounds listings; tests shorten it.
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
