package multipart_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/multipart"
	"github.com/mushroomdb/bucketlease/internal/testsupport/leakcheck"
)

// memSteps are multipart.UploadSteps in memory that record what they are
// asked, and fail where told.
type memSteps struct {
	mu       sync.Mutex
	log      []string       // "start", "part n", "drain", "commit n", "abort", "single"
	parts    map[int][]byte // staged, by number
	inFlight atomic.Int32
	most     atomic.Int32 // the most StagePart calls at once

	failPart   int           // a part whose StagePart fails, or 0
	commitErr  error         // what Commit returns
	block      chan struct{} // if set, StagePart waits for it or its ctx
	abortCtxOK bool          // Abort's context had not ended
	committed  []byte
}

var (
	errPart     = errors.New("part refused by the service")
	errLost     = errors.New("connection reset by peer")
	errRefused  = errors.New("PreconditionFailed")
	errReader   = errors.New("the body's reader failed")
	errMayStart = errors.New("fenced")
)

func (m *memSteps) note(s string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.log = append(m.log, s)
}

func (m *memSteps) calls() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.log)
}

func (m *memSteps) Start(context.Context) error { m.note("start"); return nil }

func (m *memSteps) StagePart(ctx context.Context, n int, data []byte) error {
	c := m.inFlight.Add(1)
	defer m.inFlight.Add(-1)
	for old := m.most.Load(); c > old && !m.most.CompareAndSwap(old, c); old = m.most.Load() {
	}
	m.note(fmt.Sprintf("part %d", n))
	if m.block != nil {
		select {
		case <-m.block:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if n == m.failPart {
		return errPart
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.parts == nil {
		m.parts = map[int][]byte{}
	}
	m.parts[n] = append(m.parts[n], data...)
	return nil
}

func (m *memSteps) Commit(_ context.Context, n int) (driver.Version, error) {
	m.note(fmt.Sprintf("commit %d", n))
	if m.commitErr != nil {
		return "v-refused", m.commitErr // a version with the error is not the write's
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var all []byte
	for i := 1; i <= n; i++ {
		all = append(all, m.parts[i]...)
	}
	m.committed = all
	return "v1", nil
}

func (m *memSteps) Abort(ctx context.Context, _ bool) multipart.Leftover {
	m.note("abort")
	_, deadline := ctx.Deadline()
	m.abortCtxOK = ctx.Err() == nil && deadline
	return multipart.Leftover{Upload: "upload U", Aborted: true}
}

func (m *memSteps) Kind(err error, commit bool) error {
	switch {
	case commit && errors.Is(err, errRefused):
		return driver.ErrPrecondition
	case commit && errors.Is(err, errLost):
		return driver.ErrOutcomeUnknown
	case errors.Is(err, errPart):
		return driver.ErrPermission
	}
	return nil
}

// singleSteps are memSteps with PutSingle.
type singleSteps struct{ *memSteps }

func (s singleSteps) PutSingle(_ context.Context, data []byte) (driver.Version, error) {
	s.note("single")
	s.committed = bytes.Clone(data)
	return "v-single", nil
}

// drainSteps are memSteps with Drain.
type drainSteps struct{ *memSteps }

func (s drainSteps) Drain(context.Context) error { s.note("drain"); return nil }

const part = driver.MinPartSize

// testBody returns n reproducible bytes.
func testBody(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>9)
	}
	return b
}

// oneByteAtATime hides the reader's size and returns at most one byte a
// read at first, then the rest in large reads, so that parts are filled by
// many reads.
type slowStart struct {
	r    io.Reader
	left int
}

func (s *slowStart) Read(p []byte) (int, error) {
	if s.left > 0 {
		s.left--
		p = p[:min(len(p), 1)]
	}
	return s.r.Read(p)
}

// stream runs multipart.Stream for key "k" IfAbsent.
func stream(ctx context.Context, r io.Reader, opts *driver.StreamOptions, plan multipart.Parts, steps multipart.UploadSteps) (driver.Attrs, error) {
	op, err := driver.BeginPut(ctx, driver.Capabilities{Exclusion: driver.Conditional}, "mem-steps", "k", driver.PutOptions{If: driver.IfAbsent()})
	if err != nil {
		return driver.Attrs{}, err
	}
	return multipart.Stream(op, r, opts, plan, steps)
}

// gate returns a MayStart that counts its calls and refuses call refuse
// (never if 0), and a func that returns the count.
func gate(refuse int) (func() error, func() int) {
	var n atomic.Int32
	return func() error {
			if int(n.Add(1)) == refuse {
				return errMayStart
			}
			return nil
		}, func() int {
			return int(n.Load())
		}
}

func TestStreamPartsStoresTheBodyInParts(t *testing.T) {
	for _, c := range []struct {
		name  string
		n     int
		parts int
	}{
		{"two and a half parts", 2*part + part/2, 3},
		{"two parts exactly", 2 * part, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := &memSteps{}
			allow, calls := gate(0)
			want := testBody(c.n)
			a, err := stream(t.Context(), &slowStart{r: bytes.NewReader(want), left: 100}, &driver.StreamOptions{PartSize: part, Concurrency: 2, MayStart: allow}, multipart.Parts{}, m)
			if err != nil || a.Version != "v1" {
				t.Fatalf("%q, %v", a.Version, err)
			}
			if !bytes.Equal(m.committed, want) {
				t.Errorf("committed %d bytes, not the body's %d", len(m.committed), len(want))
			}
			if got := calls(); got != c.parts+1 {
				t.Errorf("MayStart asked %d times for %d parts and the commit", got, c.parts)
			}
			log := m.calls()
			if log[0] != "start" || log[len(log)-1] != fmt.Sprintf("commit %d", c.parts) || len(log) != c.parts+2 {
				t.Errorf("steps %v: want start, %d parts, and the commit of them", log, c.parts)
			}
			if most := m.most.Load(); most > 2 {
				t.Errorf("%d parts staged at once, more than the concurrency 2", most)
			}
		})
	}
}

func TestStreamPartsConcurrencyBound(t *testing.T) {
	m := &memSteps{block: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		_, err := stream(t.Context(), bytes.NewReader(testBody(6*part)), &driver.StreamOptions{PartSize: part, Concurrency: 3}, multipart.Parts{}, m)
		done <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for m.inFlight.Load() < 3 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // a fourth would start now
	if n := m.inFlight.Load(); n != 3 {
		t.Errorf("%d parts in flight, want the concurrency, 3", n)
	}
	close(m.block)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if most := m.most.Load(); most != 3 {
		t.Errorf("at most %d parts at once, want 3", most)
	}
}

func TestStreamPartsOnePartOrLess(t *testing.T) {
	for _, n := range []int{0, 1, part} {
		m := &memSteps{}
		allow, calls := gate(0)
		a, err := stream(t.Context(), bytes.NewReader(testBody(n)), &driver.StreamOptions{PartSize: part, MayStart: allow}, multipart.Parts{}, singleSteps{m})
		if err != nil || a.Version != "v-single" || !bytes.Equal(m.committed, testBody(n)) {
			t.Errorf("a body of %d bytes with PutSingle: %q, %v", n, a.Version, err)
		}
		if log := m.calls(); !slices.Equal(log, []string{"single"}) {
			t.Errorf("a body of %d bytes with PutSingle: steps %v", n, log)
		}
		if want := min(n, 1) + 1; calls() != want {
			t.Errorf("a body of %d bytes: MayStart asked %d times, want %d (the part, if any, and the commit)", n, calls(), want)
		}
	}
	// Without PutSingle an empty body is started and committed with no part.
	m := &memSteps{}
	if _, err := stream(t.Context(), bytes.NewReader(nil), nil, multipart.Parts{}, m); err != nil {
		t.Fatal(err)
	}
	if log := m.calls(); !slices.Equal(log, []string{"start", "commit 0"}) {
		t.Errorf("an empty body without PutSingle: steps %v", log)
	}
}

// failure checks an UploadError: the cause, what it says, and that the
// upload was aborted (or, if may, may have been committed).
func failure(t *testing.T, err error, m *memSteps, cause, kind error, saying string, may bool) {
	t.Helper()
	var ue *multipart.UploadError
	if !errors.As(err, &ue) {
		t.Fatalf("%v: want a *multipart.UploadError", err)
	}
	if !errors.Is(err, cause) || kind != nil && !errors.Is(err, kind) {
		t.Errorf("%v: want %v of kind %v in the chain", err, cause, kind)
	}
	if !strings.Contains(err.Error(), saying) || !strings.Contains(err.Error(), "put k") {
		t.Errorf("%v: want it to name the key and say %q", err, saying)
	}
	if !ue.Staged || ue.Aborted == may || ue.MayHaveCommitted != may || ue.Upload != "upload U" {
		t.Errorf("%+v: want staged, aborted %t, may have committed %t", ue, !may, may)
	}
	if log := m.calls(); log[len(log)-1] != "abort" || !m.abortCtxOK {
		t.Errorf("steps %v (abort's context live and bounded: %t): want an abort last", log, m.abortCtxOK)
	}
	if !may && m.committed != nil {
		t.Error("the upload was committed")
	}
	if n := m.inFlight.Load(); n != 0 {
		t.Errorf("%d parts in flight after StreamParts returned", n)
	}
}

func TestStreamPartsAFailingPartAborts(t *testing.T) {
	m := &memSteps{failPart: 2}
	before := runtime.NumGoroutine()
	_, err := stream(t.Context(), bytes.NewReader(testBody(4*part)), &driver.StreamOptions{PartSize: part, Concurrency: 2}, multipart.Parts{}, m)
	if n := m.inFlight.Load(); n != 0 {
		t.Errorf("%d parts in flight after StreamParts returned", n)
	}
	// A part's goroutine is still counted for a moment after the Done
	// that StreamParts waits for: it must end, not have ended.
	if after := leakcheck.Settle(before); after > before {
		t.Errorf("%d goroutines before, %d after", before, after)
	}
	failure(t, err, m, errPart, driver.ErrPermission, "uploading part 2", false)
	if slices.Contains(m.calls(), "commit 4") {
		t.Error("committed after a part failed")
	}
}

func TestStreamPartsFailingCommit(t *testing.T) {
	m := &memSteps{commitErr: fmt.Errorf("completing: %w", errRefused)}
	a, err := stream(t.Context(), bytes.NewReader(testBody(2*part+1)), nil, multipart.Parts{Size: part}, m)
	failure(t, err, m, errRefused, driver.ErrPrecondition, "was aborted", false)
	if a.Version != "" {
		t.Errorf("a refused commit returned the version %q", a.Version)
	}

	// A commit whose answer is lost may have landed: it is not reported
	// aborted, whatever the abort after it did.
	m = &memSteps{commitErr: errLost}
	_, err = stream(t.Context(), bytes.NewReader(testBody(2*part+1)), nil, multipart.Parts{Size: part}, m)
	failure(t, err, m, errLost, driver.ErrOutcomeUnknown, "may have been committed", true)
}

// failingReader yields body, then fails with err, returned with the last
// bytes.
type failingReader struct {
	body []byte
	err  error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if len(f.body) == 0 {
		return 0, f.err
	}
	n := copy(p, f.body)
	f.body = f.body[n:]
	if len(f.body) == 0 {
		return n, f.err
	}
	return n, nil
}

func TestStreamPartsReaderFails(t *testing.T) {
	for _, fail := range []error{io.ErrUnexpectedEOF, errReader} {
		for _, c := range []struct {
			name string
			at   int
		}{
			{"mid-part", part + part/3},
			{"at a part boundary", 2 * part},
		} {
			for _, plan := range []multipart.Parts{{}, {Piece: 256 << 10}} {
				t.Run(fmt.Sprintf("%v %s piece %d", fail, c.name, plan.Piece), func(t *testing.T) {
					m := &memSteps{}
					_, err := stream(t.Context(), &failingReader{body: testBody(c.at), err: fail}, &driver.StreamOptions{PartSize: part, Concurrency: 2}, plan, m)
					failure(t, err, m, fail, nil, "reading the body", false)
					if slices.ContainsFunc(m.calls(), func(s string) bool { return strings.HasPrefix(s, "commit") }) {
						t.Errorf("steps %v: committed a body whose reader failed", m.calls())
					}
					// The bytes the reader gave with its error are not
					// staged: the part they end is not whole.
					if got := len(m.parts[2]); got == part {
						t.Errorf("part 2, which the failing read completed, was staged")
					}
				})
			}
		}
	}
}

func TestStreamPartsCancelled(t *testing.T) {
	m := &memSteps{block: make(chan struct{})}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	r := &cancelAt{r: bytes.NewReader(testBody(6 * part)), at: 3 * part, cancel: cancel}
	before := runtime.NumGoroutine()
	_, err := stream(ctx, r, &driver.StreamOptions{PartSize: part, Concurrency: 4}, multipart.Parts{}, m)
	if n := m.inFlight.Load(); n != 0 {
		t.Errorf("%d parts in flight after StreamParts returned", n)
	}
	// A part's goroutine is still counted for a moment after the Done
	// that StreamParts waits for: it must end, not have ended.
	if after := leakcheck.Settle(before); after > before {
		t.Errorf("%d goroutines before, %d after", before, after)
	}
	failure(t, err, m, context.Canceled, nil, "canceled", false)
	if len(m.parts) != 0 {
		t.Errorf("parts %d were stored though every part was blocked", len(m.parts))
	}
}

// cancelAt cancels once at bytes have been read.
type cancelAt struct {
	r      io.Reader
	at     int
	read   int
	cancel func()
}

func (c *cancelAt) Read(p []byte) (int, error) {
	if c.read >= c.at {
		c.cancel()
	}
	n, err := c.r.Read(p)
	c.read += n
	return n, err
}

func TestStreamPartsMayStartRefuses(t *testing.T) {
	for _, refuse := range []int{2, 4} { // part 2; the commit of three parts
		m := &memSteps{}
		allow, calls := gate(refuse)
		_, err := stream(t.Context(), bytes.NewReader(testBody(2*part+7)), &driver.StreamOptions{PartSize: part, Concurrency: 2, MayStart: allow}, multipart.Parts{}, m)
		failure(t, err, m, errMayStart, nil, "MayStart refused", false)
		if calls() != refuse {
			t.Errorf("refused at call %d: asked %d times", refuse, calls())
		}
		if started := len(m.calls()) - 2; started >= refuse {
			t.Errorf("refused at call %d: steps %v", refuse, m.calls())
		}
	}
	// Refused before the first part: nothing was started, so nothing is
	// aborted.
	m := &memSteps{}
	allow, _ := gate(1)
	_, err := stream(t.Context(), bytes.NewReader(testBody(2*part)), &driver.StreamOptions{PartSize: part, MayStart: allow}, multipart.Parts{}, m)
	var ue *multipart.UploadError
	if !errors.As(err, &ue) || ue.Staged || len(m.calls()) != 0 || !errors.Is(err, errMayStart) {
		t.Errorf("%v (steps %v): want nothing staged and no step called", err, m.calls())
	}
}

// TestStreamPartsPieces: with Parts.Piece the body is handed over in pieces,
// one at a time, MayStart asked right before the piece that completes a
// part (and, for a short last part, once the body has ended), and Drain
// before MayStart is asked for the commit.
func TestStreamPartsPieces(t *testing.T) {
	const piece = 1 << 20
	m := &memSteps{}
	var at []int // pieces handed over when MayStart was asked
	opts := &driver.StreamOptions{PartSize: part, Concurrency: 4, MayStart: func() error {
		at = append(at, len(m.calls()))
		return nil
	}}
	want := testBody(2*part + piece + 10)
	a, err := stream(t.Context(), bytes.NewReader(want), opts, multipart.Parts{Piece: piece}, drainSteps{m})
	if err != nil || a.Version != "v1" || !bytes.Equal(m.committed, want) {
		t.Fatalf("%q, %v, %d bytes committed", a.Version, err, len(m.committed))
	}
	const perPart = part / piece
	// Steps before each call: start and the pieces before the completing
	// one; all the pieces; all of them and the drain.
	if wantAt := []int{perPart, 2 * perPart, 2*perPart + 3, 2*perPart + 4}; !slices.Equal(at, wantAt) {
		t.Errorf("MayStart asked after %v steps, want %v (steps %v)", at, wantAt, m.calls())
	}
	if most := m.most.Load(); most != 1 {
		t.Errorf("%d pieces at once", most)
	}
}
