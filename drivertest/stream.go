package drivertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/multipart"
)

// Streamed writes (obligation 13); bodies are a few parts of
// driver.MinPartSize so every multipart path runs.

// streamOpts is what the checks stream with: the smallest part size every
// driver accepts, two parts at once.
func streamOpts(gate func() error) *driver.StreamOptions {
	return &driver.StreamOptions{PartSize: driver.MinPartSize, Concurrency: 2, MayStart: gate}
}

// streamBig is a body of more than two parts, not a multiple of the part size.
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
	rc, gv, err := get(ctx, b, key)
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

// stream streams r under key if cond holds and returns the new version.
func stream(ctx context.Context, b driver.Bucket, key string, r io.Reader, cond driver.Condition, opts *driver.StreamOptions) (driver.Version, error) {
	a, err := b.PutStream(ctx, key, r, driver.PutOptions{If: cond}, opts)
	return a.Version, err
}

// notStreamed turns driver.PutWhole's ErrUnsupported (a body over part
// size × concurrency) into skipped.
func notStreamed(err error) error {
	if errors.Is(err, driver.ErrUnsupported) {
		return skipped{"the driver cannot stream this body: " + err.Error()}
	}
	return nil
}

// pendingBefore returns the uploads pending on key, where visible.
func (s *scope) pendingBefore(ctx context.Context, key string) ([]string, error) {
	pending := s.pendingOf()
	if pending == nil {
		return nil, nil
	}
	ups, err := pending(ctx, key)
	if errors.Is(err, driver.ErrUnsupported) {
		return nil, nil
	}
	return ups, err
}

// nonePending fails if the failed write (werr) left an upload pending on key
// that was not in before, seen through ListPending or Options.Pending; one
// leftDeclared is accepted. A listing may lag an abort (AWS documents it as
// eventually consistent; Versity was seen doing so), so one still listed is
// looked for again for up to pendingGrace.
func (s *scope) nonePending(ctx context.Context, key string, before []string, werr error) error {
	pending := s.pendingOf()
	if pending == nil || leftDeclared(werr) {
		return nil
	}
	deadline := time.Now().Add(pendingGrace)
	for {
		ups, err := pending(ctx, key)
		if errors.Is(err, driver.ErrUnsupported) {
			return nil
		}
		if err != nil {
			return err
		}
		left := ""
		for _, u := range ups {
			if !slices.Contains(before, u) {
				left = u
				break
			}
		}
		if left == "" {
			return nil
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("the failed streamed write left a pending upload (%s) on %q: it was not aborted (still listed %v later), and its error does not declare it left (%s)", left, key, pendingGrace, declared(werr))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// leftDeclared reports whether err declares what the write staged left
// because the service cannot remove it: a *multipart.UploadError with
// Staged, not Aborted, and no AbortErr (a failed abort excuses nothing).
func leftDeclared(err error) bool {
	var ue *multipart.UploadError
	return errors.As(err, &ue) && ue.Staged && !ue.Aborted && ue.AbortErr == nil
}

// declared says what err declares of the write's upload.
func declared(err error) string {
	var ue *multipart.UploadError
	switch {
	case !errors.As(err, &ue):
		return "no *multipart.UploadError"
	case !ue.Staged:
		return "nothing staged"
	case ue.Aborted:
		return "staged and aborted"
	default:
		return fmt.Sprintf("staged, the abort failed: %v", ue.AbortErr)
	}
}

// pendingOf returns the uploads pending on key, or nil where unseen.
func (s *scope) pendingOf() func(ctx context.Context, key string) ([]string, error) {
	if pl, ok := s.b.(multipart.PendingLister); ok {
		return func(ctx context.Context, key string) ([]string, error) {
			var ups []string
			for p, err := range pl.ListPending(ctx, key) {
				if errors.Is(err, driver.ErrUnsupported) {
					return nil, err
				}
				if err != nil {
					return nil, fmt.Errorf("ListPending %q: %s", key, outcome(err))
				}
				if p.Key == key {
					ups = append(ups, p.Upload)
				}
			}
			return ups, nil
		}
	}
	if s.opts.Pending != nil {
		return func(ctx context.Context, key string) ([]string, error) {
			ups, err := s.opts.Pending(ctx, key)
			if err != nil {
				return nil, fmt.Errorf("Options.Pending(%q): %s", key, outcome(err))
			}
			return ups, nil
		}
	}
	return nil
}

// pendingGrace is how long an aborted upload may still be listed; a
// variable so this package's tests need not wait it out.
var pendingGrace = 3 * time.Second

func streamRoundTrip(ctx context.Context, s *scope) error {
	k := s.key("big")
	var calls atomic.Int32
	v, err := stream(ctx, s.b, k, newBody(3, streamBig), driver.IfAbsent(), streamOpts(func() error { calls.Add(1); return nil }))
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
	v2, err := stream(ctx, s.b, k, bytes.NewReader([]byte("small")), driver.IfMatch(v), streamOpts(nil))
	if err != nil {
		return fmt.Errorf("PutStream IfMatch(the version PutStream returned): %s", outcome(err))
	}
	return unchanged(ctx, s.b, k, []byte("small"), v2)
}

// streamChecks include those of streamcommit.go and streamfail.go.
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
		expect: "a write through PutStream whose reader fails (io.ErrUnexpectedEOF, another error; mid-part, at a part boundary, in a body shorter than one part) fails with an error wrapping the reader's, commits nothing under IfAbsent, IfMatch or no condition, and leaves no upload pending",
		run:    streamReaderFails,
	},
	check{
		name:   "stream-failed-leaves-nothing",
		expect: "after streamed writes of three parts that fail (refused at the commit, MayStart refusing the commit, the context cancelled mid-body), the key holds its old object, a listing of the check's prefix (where the driver lists) shows nothing else, and no upload is pending (through ListPending or Options.Pending; with neither, the check is skipped, saying what it saw)",
		run:    streamFailedLeavesNothing,
	},
}
