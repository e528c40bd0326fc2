package multipart

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
)

// UploadSteps are one streamed write's requests on one service. A value
// serves one write, so it may keep what Start learnt (an upload ID).
type UploadSteps interface {
	// Start begins the upload (S3's CreateMultipartUpload; nothing where
	// the service needs no call, as for Azure's blocks). Stream calls
	// it once, right before the first part is handed to StagePart, or
	// before the commit of a body with no part. Its error names the
	// request (as "starting the multipart upload: ...").
	Start(ctx context.Context) error
	// StagePart stages part n (from 1), whose bytes are data, and returns
	// once its request has ended. data is Stream's buffer, reused once
	// StagePart has returned. Up to opts.Parallel() calls run at once
	// (one at a time with Parts.Piece), each with a context that ends at
	// the upload's first failure. Its error is the service's, as it is:
	// Stream names the part.
	StagePart(ctx context.Context, n int, data []byte) error
	// Commit makes the object visible from parts 1 to parts, under the
	// write's condition, and returns the version Get would return. ctx
	// counts its own requests, so that a refusal after the client library
	// sent the commit twice is driver.ErrOutcomeUnknown. Its error names the
	// request.
	Commit(ctx context.Context, parts int) (driver.Version, error)
	// Abort removes what the upload staged, whatever happened to it, and
	// says what that was. It is called once, after a failure, when Start
	// has been called (whether it succeeded or not), with no StagePart in
	// flight and a context that ends AbortTimeout after the failure,
	// whatever became of the caller's. committing reports that the
	// failure was the commit's.
	Abort(ctx context.Context, committing bool) Leftover
	// Kind classifies an error of Start or StagePart (commit false) or of
	// Commit (commit true) as one of the contract's sentinels, or nil. A
	// Commit error that says nothing of what the service did with the
	// commit (a lost reply) is driver.ErrOutcomeUnknown: Stream then reports
	// UploadError.MayHaveCommitted.
	Kind(err error, commit bool) error
}

// Leftover is what UploadSteps.Abort reports of what a failed upload had
// staged; Stream copies it into the UploadError.
type Leftover struct {
	// Upload names what was staged (an upload ID); where the service has
	// no call that removes it, with what becomes of it. It is "" when
	// nothing was.
	Upload string
	// Aborted reports that what was staged was removed.
	Aborted bool
	// Err is why removing it failed. It is nil, with Aborted false, where
	// the service has no call that removes what was staged (Azure's
	// uncommitted blocks, a GCS resumable session), so no abort was sent.
	Err error
}

// SinglePutter is the optional interface of UploadSteps whose service
// stores a one-part body more cheaply in one conditional request.
type SinglePutter interface {
	// PutSingle stores data, the whole body, under the write's condition
	// in one request, as the driver's Put does, and returns its version
	// or the driver's error for it.
	PutSingle(ctx context.Context, data []byte) (driver.Version, error)
}

// Drainer is the optional interface of UploadSteps whose client library
// sends a part after StagePart has returned (GCS's Writer sends a chunk
// once it holds it whole); it is not an optional interface of a Bucket.
type Drainer interface {
	// Drain returns once no request of the upload is in flight. It is
	// called after the last part, before MayStart is asked for the
	// commit.
	Drain(ctx context.Context) error
}

// Parts says how Stream cuts a body for one service. Zero fields
// take the driver.StreamOptions' values.
type Parts struct {
	// Size is the size of every part but the last; 0 means opts.Size().
	Size int64
	// Max is the most parts the service takes; 0 means no limit.
	Max int
	// Piece, if > 0, hands each part to StagePart in pieces of at most
	// Piece bytes, in order and one at a time, from one buffer of Piece
	// bytes, for a client library that buffers the part itself (GCS's
	// Writer): MayStart is then asked right before the piece that
	// completes a part, when the library starts the part's request.
	Piece int
}

// AbortTimeout bounds the clean-up (UploadSteps.Abort) after a failed
// streamed write; it runs even when the caller's context has ended.
const AbortTimeout = 30 * time.Second

// Stream runs a streamed write of the body read from r through steps,
// once driver.BeginPut has returned op. It asks opts.MayStart before each
// part and before the commit, and on any failure ends the parts in
// flight, aborts what was staged and returns an *driver.OpError whose cause
// is an *UploadError. It returns only once no request is in flight, and
// holds at most part size × concurrency bytes of the body.
func Stream(op *driver.Op, r io.Reader, opts *driver.StreamOptions, plan Parts, steps UploadSteps) (driver.Attrs, error) {
	v, err := streamParts(op, r, opts, plan, steps)
	return driver.Attrs{Version: v}, err
}

func streamParts(op *driver.Op, r io.Reader, opts *driver.StreamOptions, plan Parts, steps UploadSteps) (driver.Version, error) {
	u := &upload{op: op, ctx: op.Context(), steps: steps, opts: opts, size: plan.Size, par: opts.Parallel(), max: plan.Max}
	if u.size <= 0 {
		u.size = opts.Size()
	}
	u.uctx, u.cancel = context.WithCancelCause(u.ctx)
	defer u.cancel(nil)
	if plan.Piece > 0 {
		u.pieces(r, min(int64(plan.Piece), u.size))
	} else if v, err, done := u.parts(r); done {
		return v, err
	}
	return u.finish()
}

// upload is the state of one Stream.
type upload struct {
	op    *driver.Op
	ctx   context.Context // the caller's, from op.Context
	steps UploadSteps
	opts  *driver.StreamOptions
	size  int64 // of a part
	par   int   // parts staged at once
	max   int   // parts the service takes, or 0

	uctx    context.Context // of Start and the parts, ended at the first failure
	cancel  context.CancelCauseFunc
	started bool // Start was called
	staged  int  // parts handed to StagePart
	wg      sync.WaitGroup

	mu   sync.Mutex
	err  error // the first failure
	kind error // its classification
}

// fail records the upload's first failure and ends the parts in flight.
func (u *upload) fail(kind, err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.err == nil {
		u.err, u.kind = err, kind
		u.cancel(err)
	}
}

// failed returns the first failure, or nil.
func (u *upload) failed() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.err
}

// start calls Start unless it was called, and reports whether the upload
// may go on.
func (u *upload) start() bool {
	if !u.started {
		u.started = true
		if err := u.steps.Start(u.uctx); err != nil {
			u.fail(u.steps.Kind(err, false), err)
		}
	}
	return u.failed() == nil
}

// allow asks MayStart before part no (0: the commit), and records its
// refusal.
func (u *upload) allow(no int) bool {
	if err := u.opts.Allow(); err != nil {
		what := "the commit"
		if no > 0 {
			what = fmt.Sprintf("part %d", no)
		}
		u.fail(nil, fmt.Errorf("MayStart refused %s: %w", what, err))
		return false
	}
	return true
}

// next reports whether part no may begin: the service takes that many
// parts, and nothing failed.
func (u *upload) next(no int) bool {
	if u.max > 0 && no > u.max {
		u.fail(nil, fmt.Errorf("the body is longer than %d parts of %d bytes, the most the service takes; use a larger part size", u.max, u.size))
	}
	return u.failed() == nil
}

// stage hands part no to StagePart and records its failure.
func (u *upload) stage(no int, data []byte) {
	err := u.steps.StagePart(u.uctx, no, data)
	switch {
	case err == nil:
	case u.uctx.Err() != nil:
		// Ended by the upload's cancellation: what cancelled it is the
		// failure.
		u.fail(nil, context.Cause(u.uctx))
	default:
		u.fail(u.steps.Kind(err, false), fmt.Errorf("uploading part %d: %w", no, err))
	}
}

// parts stages the body in whole parts, up to u.par at once, each in a
// buffer of its own. done reports that the body was one part or less and
// went to PutSingle, whose result v and err are.
func (u *upload) parts(r io.Reader) (v driver.Version, err error, done bool) {
	src := &partSource{r: r}
	buf := make([]byte, u.size)
	n, last, rerr := src.next(u.uctx, buf)
	if rerr != nil {
		u.fail(nil, fmt.Errorf("reading the body: %w", rerr))
		return "", nil, false
	}
	if one, ok := u.steps.(SinglePutter); ok && last {
		if (n == 0 || u.allow(1)) && u.allow(0) {
			v, err := one.PutSingle(u.ctx, buf[:n])
			return v, err, true
		}
		return "", nil, false
	}
	free := make(chan []byte, u.par)
	allocated := 1
	for no := 1; n > 0 && u.next(no) && u.allow(no) && u.start(); no++ {
		data := buf[:n]
		u.staged = no
		u.wg.Go(func() {
			defer func() { free <- data[:cap(data)] }()
			u.stage(no, data)
		})
		if last {
			break
		}
		select {
		case buf = <-free:
		default:
			if allocated < u.par {
				buf = make([]byte, u.size)
				allocated++
				break
			}
			select {
			case buf = <-free:
			case <-u.uctx.Done():
				return "", nil, false
			}
		}
		if n, last, rerr = src.next(u.uctx, buf); rerr != nil {
			u.fail(nil, fmt.Errorf("reading the body: %w", rerr))
			break
		}
	}
	return "", nil, false
}

// pieces hands the body to StagePart in pieces of at most piece bytes, one
// at a time, asking MayStart before the piece that completes a part.
func (u *upload) pieces(r io.Reader, piece int64) {
	buf := make([]byte, piece)
	var written int64
	for no := 1; ; {
		at := written % u.size
		m, rerr := ReadPart(u.uctx, r, buf[:min(piece, u.size-at)])
		if rerr != nil && rerr != io.EOF {
			// The bytes r gave with its error are not handed over: the
			// body is not whole.
			u.fail(nil, fmt.Errorf("reading the body: %w", rerr))
			return
		}
		if m > 0 {
			completes := at+int64(m) == u.size
			if !u.next(no) || !u.start() || completes && !u.allow(no) {
				return
			}
			u.staged = no
			if u.stage(no, buf[:m]); u.failed() != nil {
				return
			}
			written += int64(m)
			if completes {
				no++
			}
		}
		if rerr == io.EOF {
			if written%u.size != 0 {
				// The last part is short: its request is the commit's.
				u.allow(no)
			}
			return
		}
	}
}

// finish waits for the parts in flight, then commits, or aborts after a
// failure, and returns the write's result.
func (u *upload) finish() (driver.Version, error) {
	u.wg.Wait()
	if u.failed() == nil && u.ctx.Err() != nil {
		u.fail(nil, context.Cause(u.ctx))
	}
	if u.failed() == nil && u.start() {
		if d, ok := u.steps.(Drainer); ok {
			if err := d.Drain(u.uctx); err != nil {
				u.fail(u.steps.Kind(err, false), fmt.Errorf("finishing part %d: %w", u.staged, err))
			}
		}
	}
	if u.failed() == nil && u.allow(0) && u.ctx.Err() != nil {
		u.fail(nil, context.Cause(u.ctx))
	}
	if err := u.failed(); err != nil {
		return "", u.op.FailSettled(u.kind, u.abort(err, false))
	}
	// The commit is its own operation, so that Fail counts its attempts
	// only: a commit the client library sent twice and whose second
	// attempt was refused is driver.ErrOutcomeUnknown.
	cop := u.op.Step()
	v, err := u.steps.Commit(cop.Context(), u.staged)
	if err != nil {
		kind := u.steps.Kind(err, true)
		ue := u.abort(err, true)
		if kind == driver.ErrOutcomeUnknown {
			// No answer said what the service did: the commit may have
			// landed, and no abort sent after it can tell (S3 forgets an
			// upload once it is completed or aborted alike).
			ue.Err = fmt.Errorf("nothing says whether the commit landed (read the object back): %w", err)
			ue.Aborted, ue.MayHaveCommitted = false, true
		}
		return "", cop.Fail(kind, ue)
	}
	if v == "" {
		return "", cop.Fail(nil, errors.New("the service's answer to the commit carried no version"))
	}
	return v, nil
}

// abort ends what the failed upload staged, if it was started, within
// AbortTimeout whatever state the caller's context is in, and returns the
// UploadError for cause.
func (u *upload) abort(cause error, committing bool) *UploadError {
	ue := &UploadError{Err: cause}
	if !u.started {
		return ue
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(u.ctx), AbortTimeout)
	defer cancel()
	lo := u.steps.Abort(actx, committing)
	ue.Staged = lo.Upload != "" || lo.Err != nil
	ue.Aborted = ue.Staged && lo.Aborted && lo.Err == nil
	ue.AbortErr, ue.Upload = lo.Err, lo.Upload
	return ue
}
