package drivertest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync/atomic"

	"github.com/mushroomdb/bucketlease/driver"
)

// Streamed writes that fail before the commit store nothing and leave no
// upload pending.

// cancelingBody yields the body past bytes, then cancels the write's context
// and yields one byte per read, as a slow producer does.
type cancelingBody struct {
	r      io.Reader
	after  int64
	read   int64
	cancel func()
	fired  atomic.Bool
}

func (c *cancelingBody) Read(p []byte) (int, error) {
	if c.read >= c.after {
		if !c.fired.Swap(true) {
			c.cancel()
		}
		p = p[:min(len(p), 1)]
	}
	n, err := c.r.Read(p)
	c.read += int64(n)
	return n, err
}

func streamCanceledMidBody(ctx context.Context, s *scope) error {
	k := s.key("obj")
	v, err := seed(ctx, s.b, k, []byte("keep"))
	if err != nil {
		return err
	}
	for _, cond := range []driver.Condition{driver.IfAbsent(), driver.IfMatch(v)} {
		key := k
		if cond == driver.IfAbsent() {
			key = s.key("new")
		}
		before, err := s.pendingBefore(ctx, key)
		if err != nil {
			return err
		}
		cctx, cancel := context.WithCancel(ctx)
		// Cancelled while the second part is being read, so that the first
		// is staged (or in flight) when it happens.
		b := &cancelingBody{r: newBody(2, 4*driver.MinPartSize), after: driver.MinPartSize + 1<<20, cancel: cancel}
		_, err = stream(cctx, s.b, key, b, cond, streamOpts(nil))
		cancel()
		if sk := notStreamed(err); sk != nil {
			return sk
		}
		if !b.fired.Load() {
			return fmt.Errorf("setup: PutStream (%s) returned (%s) before reading %d bytes of the body", cond, outcome(err), b.after)
		}
		if !errors.Is(err, context.Canceled) {
			return fmt.Errorf("PutStream (%s) whose context was cancelled mid-body: %s, not context.Canceled", cond, outcome(err))
		}
		if cond == driver.IfAbsent() {
			if aerr := absent(ctx, s.b, key); aerr != nil {
				return fmt.Errorf("after the cancelled PutStream (%s): %w", cond, aerr)
			}
		} else if uerr := unchanged(ctx, s.b, key, []byte("keep"), v); uerr != nil {
			return fmt.Errorf("after the cancelled PutStream (%s): %w", cond, uerr)
		}
		if perr := s.nonePending(ctx, key, before, err); perr != nil {
			return perr
		}
	}
	return nil
}

// errGate is what the MayStart of stream-may-start-refused returns.
var errGate = errors.New("drivertest: the fence refuses")

func streamMayStartRefused(ctx context.Context, s *scope) error {
	// Refused at the second part, then (in a second write) at the commit.
	for _, allowed := range []int32{1, 3} {
		k := s.key("obj" + strconv.Itoa(int(allowed)))
		var calls atomic.Int32
		gate := func() error {
			if calls.Add(1) > allowed {
				return errGate
			}
			return nil
		}
		before, err := s.pendingBefore(ctx, k)
		if err != nil {
			return err
		}
		_, err = stream(ctx, s.b, k, newBody(4, streamBig), driver.IfAbsent(), streamOpts(gate))
		if sk := notStreamed(err); sk != nil {
			return sk
		}
		if !errors.Is(err, errGate) {
			return fmt.Errorf("PutStream whose MayStart refused after %d calls: %s, want an error wrapping MayStart's", allowed, outcome(err))
		}
		if c := calls.Load(); c != allowed+1 {
			return fmt.Errorf("MayStart was called %d times, want %d: nothing is started, and MayStart not asked again, once it refused", c, allowed+1)
		}
		if aerr := absent(ctx, s.b, k); aerr != nil {
			return fmt.Errorf("after MayStart refused (after %d calls): %w", allowed, aerr)
		}
		if perr := s.nonePending(ctx, k, before, err); perr != nil {
			return perr
		}
	}
	return nil
}

// errBodyFailed is stream-reader-fails' error other than ErrUnexpectedEOF.
var errBodyFailed = errors.New("drivertest: the body's reader failed")

// failingBody yields newBody(seed, at), then fails with err: with the last
// bytes, then alone on every later read, as a cut HTTP body does.
type failingBody struct {
	r    io.Reader
	at   int64
	err  error
	read int64
}

func (f *failingBody) Read(p []byte) (int, error) {
	left := f.at - f.read
	if left <= 0 {
		return 0, f.err
	}
	if int64(len(p)) < left {
		n, err := f.r.Read(p)
		f.read += int64(n)
		return n, err
	}
	n, err := io.ReadFull(f.r, p[:left])
	f.read += int64(n)
	if err != nil {
		return n, err
	}
	return n, f.err
}

// failed reports whether err is the failure this body was made to return.
func (f *failingBody) failed(err error) bool { return errors.Is(err, f.err) }

// streamReaderFails streams bodies whose reader fails (with
// io.ErrUnexpectedEOF or another error; mid-part, at a boundary, or in a
// one-part body): the write must fail wrapping the reader's error, commit
// nothing under any condition, and leave no upload pending. It checks
// driver.PutWhole too.
func streamReaderFails(ctx context.Context, s *scope) error {
	existing := s.key("existing")
	v, err := seed(ctx, s.b, existing, []byte("keep"))
	if err != nil {
		return err
	}
	type place struct {
		name string
		at   int64
	}
	places := []place{
		{"mid-part (in the second part)", driver.MinPartSize + 1<<20 + 7},
		{"at a part boundary (the end of the second part)", 2 * driver.MinPartSize},
		{"within a body shorter than one part", 1<<20 + 3},
	}
	conds := []driver.Condition{driver.IfAbsent(), driver.IfMatch(v), {}}
	i := 0
	for _, fail := range []error{io.ErrUnexpectedEOF, errBodyFailed} {
		for _, p := range places {
			cond := conds[i%len(conds)]
			i++
			key := existing
			if cond == driver.IfAbsent() {
				key = s.key("new" + strconv.Itoa(i))
			}
			body := &failingBody{r: newBody(uint64(10+i), p.at+driver.MinPartSize), at: p.at, err: fail}
			what := fmt.Sprintf("PutStream (%s) whose reader fails with %q %s", cond, fail, p.name)
			before, err := s.pendingBefore(ctx, key)
			if err != nil {
				return err
			}
			_, err = stream(ctx, s.b, key, body, cond, streamOpts(nil))
			if sk := notStreamed(err); sk != nil {
				return sk
			}
			if err == nil {
				return fmt.Errorf("%s succeeded: a truncated body (%d bytes) was committed as whole", what, body.read)
			}
			if !errors.Is(err, fail) {
				return fmt.Errorf("%s: %s, want an error wrapping the reader's", what, outcome(err))
			}
			if cond == driver.IfAbsent() {
				if aerr := absent(ctx, s.b, key); aerr != nil {
					return fmt.Errorf("after the %s: %w", what, aerr)
				}
			} else if uerr := unchanged(ctx, s.b, key, []byte("keep"), v); uerr != nil {
				return fmt.Errorf("after the %s: %w", what, uerr)
			}
			if perr := s.nonePending(ctx, key, before, err); perr != nil {
				return fmt.Errorf("after the %s: %w", what, perr)
			}
		}
	}
	return nil
}

// streamFailedLeavesNothing fails three streamed writes on one key (refused
// at the commit, MayStart refusing, cancelled mid-body) and looks for what
// they left: the key, a listing of the prefix, and the uploads pending
// (beyond leftDeclared). Without ListPending or Options.Pending it proves
// the rest and reports itself skipped, since an error's word that it
// aborted is no proof. A PutWhole driver gets bodies of part size ×
// concurrency.
func streamFailedLeavesNothing(ctx context.Context, s *scope) error {
	k := s.key("obj")
	v, err := seed(ctx, s.b, k, []byte("keep"))
	if err != nil {
		return err
	}
	size, gateAfter := int64(streamBig), int32(3)
	var asked atomic.Int32
	// write makes one failing write on k and checks what it left.
	write := func(what string, seed uint64, cond driver.Condition, gate func() error, want error) error {
		before, err := s.pendingBefore(ctx, k)
		if err != nil {
			return err
		}
		asked.Store(0)
		_, err = stream(ctx, s.b, k, newBody(seed, size), cond, streamOpts(gate))
		if errors.Is(err, driver.ErrUnsupported) && size == streamBig {
			opts := streamOpts(nil)
			size, gateAfter = opts.Size()*int64(opts.Parallel()), 0
			asked.Store(0)
			_, err = stream(ctx, s.b, k, newBody(seed, size), cond, streamOpts(gate))
		}
		if !errors.Is(err, want) {
			return fmt.Errorf("%s: %s, want an error matching %v", what, outcome(err), want)
		}
		if perr := s.nonePending(ctx, k, before, err); perr != nil {
			return fmt.Errorf("after the %s: %w", what, perr)
		}
		return nil
	}
	if err := write("PutStream (IfAbsent) over an existing key", 1, driver.IfAbsent(), nil, driver.ErrPrecondition); err != nil {
		return err
	}
	gate := func() error {
		if asked.Add(1) > gateAfter {
			return errGate
		}
		return nil
	}
	if err := write("PutStream whose MayStart refuses the commit", 2, driver.IfMatch(v), gate, errGate); err != nil {
		return err
	}
	// Cancelled while the second part is read (while the body is read,
	// for driver.PutWhole).
	before, err := s.pendingBefore(ctx, k)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithCancel(ctx)
	b := &cancelingBody{r: newBody(3, 4*driver.MinPartSize), after: driver.MinPartSize + 1<<20, cancel: cancel}
	_, err = stream(cctx, s.b, k, b, driver.IfMatch(v), streamOpts(nil))
	cancel()
	if !errors.Is(err, context.Canceled) {
		return fmt.Errorf("PutStream cancelled mid-body: %s, want an error matching context.Canceled", outcome(err))
	}
	if perr := s.nonePending(ctx, k, before, err); perr != nil {
		return fmt.Errorf("after the PutStream cancelled mid-body: %w", perr)
	}
	if err := unchanged(ctx, s.b, k, []byte("keep"), v); err != nil {
		return err
	}
	saw := "the key holds its old object"
	for o, err := range s.b.List(ctx, s.prefix+"/") {
		if err != nil {
			return fmt.Errorf("List %q: %s", s.prefix+"/", outcome(err))
		}
		if o.Key != k {
			return fmt.Errorf("after the failed streamed writes on %q, List shows %q, which no write of the check made: what a failed write staged must be removed", k, o.Key)
		}
	}
	saw += " and List of the check's prefix shows nothing else"
	if s.pendingOf() == nil {
		return skipped{"skipped: " + saw + ", but an upload staged where Get and List do not reach cannot be seen: the driver is no multipart.PendingLister and Options.Pending is nil, so that the failed writes were aborted is not proven"}
	}
	return nil
}
