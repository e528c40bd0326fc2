package drivertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
)

// The checks of streamed writes (driver.Streamer), obligation 13 of the
// driver package's documentation. Bodies are a few parts of
// driver.MinPartSize, so that every driver's multipart path runs while the
// checks stay small.

// streamOpts is what the checks stream with: the smallest part size every
// driver accepts, two parts at once.
func streamOpts(gate func() error) *driver.StreamOptions {
	return &driver.StreamOptions{PartSize: driver.MinPartSize, Concurrency: 2, MayStart: gate}
}

// streamBig is a body of more than two parts, not a multiple of the part
// size.
const streamBig = 2*driver.MinPartSize + 3<<20 + 17

// body is a reproducible body of n bytes, of unknown length to its reader
// (no Len, Size or Seek).
type body struct{ r io.Reader }

func (b *body) Read(p []byte) (int, error) { return b.r.Read(p) }

func newBody(seed uint64, n int64) *body {
	var s [32]byte
	copy(s[:], strconv.FormatUint(seed, 16))
	return &body{r: io.LimitReader(mrand.NewChaCha8(s), n)}
}

// holdsBody fails unless key holds exactly the body newBody(seed, n), with
// version v if v is not empty.
func holdsBody(ctx context.Context, b driver.Bucket, key string, seed uint64, n int64, v driver.Version) error {
	rc, gv, err := b.Get(ctx, key)
	if err != nil {
		return fmt.Errorf("Get after the streamed write: %s", outcome(err))
	}
	defer rc.Close()
	if v != "" && gv != v {
		return fmt.Errorf("PutStream returned version %q, but Get returns %q", v, gv)
	}
	want := newBody(seed, n)
	a, c := make([]byte, 64<<10), make([]byte, 64<<10)
	var off int64
	for {
		na, errA := io.ReadFull(rc, a)
		nc, _ := io.ReadFull(want, c)
		if !bytes.Equal(a[:na], c[:nc]) {
			i := 0
			for i < min(na, nc) && a[i] == c[i] {
				i++
			}
			if na < nc && i == na {
				return fmt.Errorf("the stored object is %d bytes long, the body was %d", off+int64(na), n)
			}
			return fmt.Errorf("the stored object differs from the body at byte %d (of %d)", off+int64(i), n)
		}
		off += int64(na)
		if errA == io.EOF || errA == io.ErrUnexpectedEOF {
			if off != n {
				return fmt.Errorf("the stored object is %d bytes long, the body was %d", off, n)
			}
			return nil
		}
		if errA != nil {
			return fmt.Errorf("reading the object: %s", outcome(errA))
		}
	}
}

// streamer returns s.b as a Streamer, or skipped if the driver under test
// is not one.
func (s *scope) streamer() (driver.Streamer, error) {
	if _, ok := s.raw.(driver.Streamer); !ok {
		return nil, skipped{"the driver does not stream (no driver.Streamer; driver.PutStream falls back to one Put)"}
	}
	return s.b.(driver.Streamer), nil
}

// notStreamed turns the ErrUnsupported of a driver that is a Streamer only
// as a wrapper (besteffort over a driver that cannot stream, whose
// fallback refuses a body over part size × concurrency) into skipped.
func notStreamed(err error) error {
	if errors.Is(err, driver.ErrUnsupported) {
		return skipped{"the driver cannot stream this body: " + err.Error()}
	}
	return nil
}

// nonePending fails if the driver can list pending uploads and one is left
// under key. A listing may lag an abort (AWS documents ListMultipartUploads
// as eventually consistent, and Versity S3 Gateway was seen listing an
// upload it had just aborted), so an upload still listed is looked for
// again, for up to pendingGrace, before it counts as left behind.
func (s *scope) nonePending(ctx context.Context, key string) error {
	pl, ok := s.b.(driver.PendingLister)
	if !ok {
		return nil
	}
	deadline := time.Now().Add(pendingGrace)
	for {
		left := ""
		for p, err := range pl.ListPending(ctx, key) {
			if errors.Is(err, driver.ErrUnsupported) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("ListPending %q: %s", key, outcome(err))
			}
			if p.Key == key {
				left = p.Upload
				break
			}
		}
		if left == "" {
			return nil
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("the failed streamed write left a pending upload (%s) on %q: it was not aborted (still listed %v later)", left, key, pendingGrace)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// pendingGrace is how long an aborted upload may still be listed.
const pendingGrace = 3 * time.Second

// refusedAtCommit checks a streamed write whose condition fails: the error
// is ErrPrecondition, names the abort, and nothing changed.
func refusedAtCommit(ctx context.Context, s *scope, k string, cond driver.Condition, keep []byte, v driver.Version) error {
	st, err := s.streamer()
	if err != nil {
		return err
	}
	_, err = st.PutStream(ctx, k, newBody(1, streamBig), cond, streamOpts(nil))
	if sk := notStreamed(err); sk != nil {
		return sk
	}
	if err := want("PutStream ("+cond.String()+") of a body of three parts", err, driver.ErrPrecondition); err != nil {
		return err
	}
	var ue *driver.UploadError
	if !errors.As(err, &ue) {
		return fmt.Errorf("the refusal does not say what became of the upload (no *driver.UploadError in its chain): %v", err)
	}
	if err := unchanged(ctx, s.b, k, keep, v); err != nil {
		return err
	}
	return s.nonePending(ctx, k)
}

func streamIfAbsentExisting(ctx context.Context, s *scope) error {
	k := s.key("obj")
	v, err := seed(ctx, s.b, k, []byte("first"))
	if err != nil {
		return err
	}
	return refusedAtCommit(ctx, s, k, driver.IfAbsent(), []byte("first"), v)
}

func streamIfMatchStale(ctx context.Context, s *scope) error {
	k := s.key("obj")
	v1, err := seed(ctx, s.b, k, []byte("one"))
	if err != nil {
		return err
	}
	v2, err := s.b.Put(ctx, k, []byte("two"), driver.IfMatch(v1))
	if err != nil {
		return fmt.Errorf("setup: Put IfMatch(current): %s", outcome(err))
	}
	return refusedAtCommit(ctx, s, k, driver.IfMatch(v1), []byte("two"), v2)
}

func streamRace(ctx context.Context, s *scope) error {
	st, err := s.streamer()
	if err != nil {
		return err
	}
	const n = 8
	const size = driver.MinPartSize + 1<<20 // two parts each
	k := s.key("contested")
	var (
		wg      sync.WaitGroup
		start   = make(chan struct{})
		mu      sync.Mutex
		winners []int
		unknown []int
		vers    = map[int]driver.Version{}
		odd     []string

		unsupported error
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			v, err := st.PutStream(ctx, k, newBody(uint64(100+i), size), driver.IfAbsent(), streamOpts(nil))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case notStreamed(err) != nil:
				unsupported = notStreamed(err)
			case err == nil:
				winners = append(winners, i)
				vers[i] = v
			case errors.Is(err, driver.ErrOutcomeUnknown):
				unknown = append(unknown, i)
			case !errors.Is(err, driver.ErrPrecondition):
				odd = append(odd, outcome(err))
			}
		}()
	}
	close(start)
	wg.Wait()
	if unsupported != nil {
		return unsupported
	}
	if len(odd) > 0 {
		return fmt.Errorf("losers got errors other than ErrPrecondition: %v", odd)
	}
	if len(unknown) > 0 && len(winners) == 0 {
		// An unknown outcome is the object's to tell.
		for _, i := range unknown {
			if holdsBody(ctx, s.b, k, uint64(100+i), size, "") == nil {
				winners = append(winners, i)
			}
		}
	}
	if len(winners) != 1 {
		return fmt.Errorf("%d streamed IfAbsent writers succeeded (%v); exactly one should", len(winners), winners)
	}
	if err := holdsBody(ctx, s.b, k, uint64(100+winners[0]), size, vers[winners[0]]); err != nil {
		return fmt.Errorf("the object is not the winner's (writer %d) whole body: %w", winners[0], err)
	}
	return nil
}

// cancelingBody yields the body until after bytes, then cancels the
// write's context and from then on yields one byte per read, as a slow
// producer does, until the body ends.
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
	st, err := s.streamer()
	if err != nil {
		return err
	}
	k := s.key("obj")
	v, err := seed(ctx, s.b, k, []byte("keep"))
	if err != nil {
		return err
	}
	for _, cond := range []driver.Condition{driver.IfAbsent(), driver.IfMatch(v)} {
		key := k
		if cond.Absent() {
			key = s.key("new")
		}
		cctx, cancel := context.WithCancel(ctx)
		// Cancelled while the second part is being read, so that the first
		// is staged (or in flight) when it happens.
		b := &cancelingBody{r: newBody(2, 4*driver.MinPartSize), after: driver.MinPartSize + 1<<20, cancel: cancel}
		_, err := st.PutStream(cctx, key, b, cond, streamOpts(nil))
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
		if cond.Absent() {
			if err := absent(ctx, s.b, key); err != nil {
				return fmt.Errorf("after the cancelled PutStream (%s): %w", cond, err)
			}
		} else if err := unchanged(ctx, s.b, key, []byte("keep"), v); err != nil {
			return fmt.Errorf("after the cancelled PutStream (%s): %w", cond, err)
		}
		if err := s.nonePending(ctx, key); err != nil {
			return err
		}
	}
	return nil
}

func streamRoundTrip(ctx context.Context, s *scope) error {
	st, err := s.streamer()
	if err != nil {
		return err
	}
	k := s.key("big")
	var calls atomic.Int32
	v, err := st.PutStream(ctx, k, newBody(3, streamBig), driver.IfAbsent(), streamOpts(func() error { calls.Add(1); return nil }))
	if sk := notStreamed(err); sk != nil {
		return sk
	}
	if err != nil {
		return fmt.Errorf("PutStream IfAbsent of %d bytes of unknown length: %s", streamBig, outcome(err))
	}
	if v == "" {
		return errors.New("PutStream returned an empty version")
	}
	if err := holdsBody(ctx, s.b, k, 3, streamBig, v); err != nil {
		return err
	}
	// Three parts and the commit.
	if c := calls.Load(); c < 4 {
		return fmt.Errorf("MayStart was called %d times for a body of three parts; it must be called before each part and before the commit", c)
	}
	// The version works in the next condition.
	v2, err := st.PutStream(ctx, k, bytes.NewReader([]byte("small")), driver.IfMatch(v), streamOpts(nil))
	if err != nil {
		return fmt.Errorf("PutStream IfMatch(the version PutStream returned): %s", outcome(err))
	}
	return unchanged(ctx, s.b, k, []byte("small"), v2)
}

// errGate is what the MayStart of stream-may-start-refused returns.
var errGate = errors.New("drivertest: the fence refuses")

func streamMayStartRefused(ctx context.Context, s *scope) error {
	st, err := s.streamer()
	if err != nil {
		return err
	}
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
		_, err := st.PutStream(ctx, k, newBody(4, streamBig), driver.IfAbsent(), streamOpts(gate))
		if sk := notStreamed(err); sk != nil {
			return sk
		}
		if !errors.Is(err, errGate) {
			return fmt.Errorf("PutStream whose MayStart refused after %d calls: %s, want an error wrapping MayStart's", allowed, outcome(err))
		}
		if c := calls.Load(); c != allowed+1 {
			return fmt.Errorf("MayStart was called %d times, want %d: nothing is started, and MayStart not asked again, once it refused", c, allowed+1)
		}
		if err := absent(ctx, s.b, k); err != nil {
			return fmt.Errorf("after MayStart refused (after %d calls): %w", allowed, err)
		}
		if err := s.nonePending(ctx, k); err != nil {
			return err
		}
	}
	return nil
}

// streamChecks are the checks of this file; suite.go orders them.
var streamChecks = []check{
	check{
		name:   "stream-if-absent-existing",
		area:   areaPut,
		expect: "a streamed IfAbsent write of three parts over an existing key is refused at the commit (ErrPrecondition) and leaves the object unchanged, with no upload pending",
		run:    streamIfAbsentExisting,
	},
	check{
		name:   "stream-if-match-stale",
		area:   areaPut,
		expect: "a streamed IfMatch write of three parts on a superseded version is refused at the commit (ErrPrecondition) and leaves the object unchanged, with no upload pending",
		run:    streamIfMatchStale,
	},
	check{
		name:    "stream-race-if-absent",
		area:    areaPut,
		applies: conditional,
		expect:  "8 concurrent streamed IfAbsent writers of two parts on one key: exactly one succeeds, and the object is its whole body",
		run:     streamRace,
	},
	check{
		name:   "stream-canceled-mid-body",
		expect: "a streamed write whose context is cancelled while its body is read returns an error matching context.Canceled, stores nothing, and leaves no upload pending",
		run:    streamCanceledMidBody,
	},
	check{
		name:   "stream-round-trip",
		expect: "a streamed body of unknown length over two parts is stored byte for byte, with the version Get returns, MayStart called before each part and the commit",
		run:    streamRoundTrip,
	},
	check{
		name:   "stream-may-start-refused",
		expect: "a streamed write whose MayStart refuses (at a part, at the commit) fails with MayStart's error, stores nothing, asks MayStart no more, and leaves no upload pending",
		run:    streamMayStartRefused,
	},
	check{
		name:   "stream-reader-fails",
		expect: "a write through driver.PutStream whose reader fails (io.ErrUnexpectedEOF, another error; mid-part, at a part boundary, in a body shorter than one part) fails with an error wrapping the reader's, commits nothing under IfAbsent, IfMatch or no condition, and leaves no upload pending",
		run:    streamReaderFails,
	},
}

// errBodyFailed is the error (other than io.ErrUnexpectedEOF) that the
// body of stream-reader-fails returns.
var errBodyFailed = errors.New("drivertest: the body's reader failed")

// failingBody yields the body newBody(seed, at) and then fails with err:
// the read that reaches byte at returns its last bytes together with err
// (as a reader may), and every read after it returns err alone, as a cut
// HTTP body, a gzip or a tar reader does.
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

// streamReaderFails streams bodies whose reader fails, with
// io.ErrUnexpectedEOF and with another error, mid-part, exactly at a part
// boundary, and within a body shorter than one part (which most drivers
// send as one request): the write must fail with an error wrapping the
// reader's, commit nothing (a new key stays absent, an existing one
// unchanged, under IfAbsent, IfMatch and no condition alike), and leave
// no upload pending. It runs through driver.PutStream, so it also checks
// the fallback of a driver that cannot stream.
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
			if cond.Absent() {
				key = s.key("new" + strconv.Itoa(i))
			}
			body := &failingBody{r: newBody(uint64(10+i), p.at+driver.MinPartSize), at: p.at, err: fail}
			what := fmt.Sprintf("PutStream (%s) whose reader fails with %q %s", cond, fail, p.name)
			_, err := driver.PutStream(ctx, s.b, key, body, cond, streamOpts(nil))
			if sk := notStreamed(err); sk != nil {
				return sk
			}
			if err == nil {
				return fmt.Errorf("%s succeeded: a truncated body (%d bytes) was committed as whole", what, body.read)
			}
			if !errors.Is(err, fail) {
				return fmt.Errorf("%s: %s, want an error wrapping the reader's", what, outcome(err))
			}
			if cond.Absent() {
				if err := absent(ctx, s.b, key); err != nil {
					return fmt.Errorf("after the %s: %w", what, err)
				}
			} else if err := unchanged(ctx, s.b, key, []byte("keep"), v); err != nil {
				return fmt.Errorf("after the %s: %w", what, err)
			}
			if err := s.nonePending(ctx, key); err != nil {
				return fmt.Errorf("after the %s: %w", what, err)
			}
		}
	}
	return nil
}
