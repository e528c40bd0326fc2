package gcs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/api/googleapi"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/gcs"
	"github.com/mushroomdb/bucketlease/driver/multipart"
	"github.com/mushroomdb/bucketlease/internal/objects"
	"github.com/mushroomdb/bucketlease/internal/testsupport/leakcheck"
)

// The streamed writes below use the smallest part size, one part at a
// time: chunks of 4.75 MiB (5 MiB rounded down to 256 KiB, less 256 KiB so
// that the chunk and the piece being handed over fit in 5 MiB).
const (
	testChunk = driver.MinPartSize - 256<<10
)

var oneAtATime = &driver.StreamOptions{PartSize: driver.MinPartSize, Concurrency: 1}

// body returns n reproducible pseudo-random bytes.
func body(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8)}))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// unknownLength hides everything of r but Read, so that nothing can learn
// the body's length in advance.
func unknownLength(b []byte) io.Reader { return struct{ io.Reader }{bytes.NewReader(b)} }

// requestCounter counts the requests sent through it and those in flight.
type requestCounter struct {
	mu       sync.Mutex
	started  int
	inFlight int
	methods  []string
}

func (c *requestCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.started++
	c.inFlight++
	c.methods = append(c.methods, r.Method+" "+r.URL.Query().Get("uploadType"))
	c.mu.Unlock()
	resp, err := http.DefaultTransport.RoundTrip(r)
	c.mu.Lock()
	c.inFlight--
	c.mu.Unlock()
	return resp, err
}

func (c *requestCounter) counts() (started, inFlight int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.started, c.inFlight
}

// streamBucket returns a fresh emulator bucket, reached through a counter
// of its requests.
func streamBucket(t *testing.T) (*gcs.Bucket, *requestCounter) {
	t.Helper()
	endpoint := emulator(t)
	rc := &requestCounter{}
	return gcs.New(client(t, endpoint, rc), newBucket(t, endpoint)), rc
}

// read returns key's body and version.
func read(t *testing.T, b driver.Bucket, key string) ([]byte, driver.Version) {
	t.Helper()
	data, v, err := objects.ReadAll(t.Context(), b, key, 64<<20, driver.GetOptions{})
	if err != nil {
		t.Fatalf("read %s: %v", key, err)
	}
	return data, v.Version
}

// TestStreamRoundTrip: bodies of unknown length, shorter than a chunk (one
// request), of two and a half chunks, and of exactly two chunks (whose
// final request carries no bytes), come back byte for byte, with the
// version PutStream returned equal to Get's.
func TestStreamRoundTrip(t *testing.T) {
	b, _ := streamBucket(t)
	for i, n := range []int{0, 1000, testChunk*2 + testChunk/2, testChunk * 2} {
		key := fmt.Sprintf("db1/chunk-%d", i)
		want := body(n, uint64(i))
		v, err := b.PutStream(t.Context(), key, unknownLength(want), driver.PutOptions{If: driver.IfAbsent()}, oneAtATime)
		if err != nil {
			t.Fatalf("PutStream of %d bytes: %v", n, err)
		}
		got, gv := read(t, b, key)
		if !bytes.Equal(got, want) {
			t.Errorf("%d bytes streamed, %d read back, or different bytes", n, len(got))
		}
		if gv != v.Version {
			t.Errorf("PutStream returned version %s, Get %s", v.Version, gv)
		}
	}
}

// TestStreamMayStartBeforeEachRequest: MayStart is asked before each
// request that starts (the first chunk's, which also starts the session,
// each further chunk's, and the final request's, twice where that carries
// the last part as well as the commit), each time with no request of the
// upload in flight, so that its answer is fresh when the request starts.
func TestStreamMayStartBeforeEachRequest(t *testing.T) {
	for _, c := range []struct {
		name    string
		n       int
		atCalls []int // requests started when MayStart is called
	}{
		{"empty", 0, []int{0}},
		{"one request", 1000, []int{0, 0}},
		{"two and a half chunks", testChunk*2 + testChunk/2, []int{0, 2, 3, 3}},
		{"two chunks exactly", testChunk * 2, []int{0, 2, 3}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, rc := streamBucket(t)
			var seen []int
			opts := *oneAtATime
			opts.MayStart = func() error {
				started, inFlight := rc.counts()
				if inFlight != 0 {
					t.Errorf("MayStart called with %d requests in flight", inFlight)
				}
				seen = append(seen, started)
				return nil
			}
			if _, err := b.PutStream(t.Context(), "k", unknownLength(body(c.n, 1)), driver.PutOptions{If: driver.IfAbsent()}, &opts); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(seen, c.atCalls) {
				t.Errorf("MayStart saw %v requests started; want %v (requests: %v)", seen, c.atCalls, rc.methods)
			}
			if started, _ := rc.counts(); started != c.atCalls[len(c.atCalls)-1]+1 {
				t.Errorf("%d requests; want %d, one after the last MayStart (requests: %v)", started, c.atCalls[len(c.atCalls)-1]+1, rc.methods)
			}
		})
	}
}

// TestStreamMayStartRefused: a refusal before the first or second chunk,
// or before the final request (for its part or for the commit), cancels
// the upload: nothing more is sent, nothing is
// committed, and the error wraps the refusal and says what became of the
// session.
func TestStreamMayStartRefused(t *testing.T) {
	refused := errors.New("the lease may not write")
	for _, at := range []int{1, 2, 3, 4} {
		t.Run(fmt.Sprint("call ", at), func(t *testing.T) {
			b, rc := streamBucket(t)
			calls, sentAtRefusal := 0, 0
			opts := *oneAtATime
			opts.MayStart = func() error {
				if calls++; calls == at {
					sentAtRefusal, _ = rc.counts()
					return refused
				}
				return nil
			}
			_, err := b.PutStream(t.Context(), "k", unknownLength(body(testChunk*2+100, 2)), driver.PutOptions{If: driver.IfAbsent()}, &opts)
			var ue *multipart.UploadError
			if !errors.Is(err, refused) || !errors.As(err, &ue) {
				t.Fatalf("PutStream refused by MayStart: %v; want the refusal inside a *multipart.UploadError", err)
			}
			if ue.Staged != (at > 1) || !strings.Contains(err.Error(), "put k") {
				t.Errorf("error %q: Staged = %v, want %v, and the key named", err, ue.Staged, at > 1)
			}
			if sent, _ := rc.counts(); sent != sentAtRefusal {
				t.Errorf("%d requests were sent after MayStart refused", sent-sentAtRefusal)
			}
			if _, _, err := b.Get(t.Context(), "k", driver.GetOptions{}); !errors.Is(err, driver.ErrNotExist) {
				t.Errorf("after a refused upload, Get: %v; want ErrNotExist", err)
			}
		})
	}
}

// TestStreamConditionAtCommit: the precondition is checked when the upload
// is finalised, not only when the session starts. The key is absent when
// a streamed IfAbsent starts its session and written by someone else
// before its final request, which must then be refused, with that other
// object left as it was. Likewise a streamed IfMatch of the version
// current when it started, overwritten meanwhile. fake-gcs-server v1.56.1
// keeps the session's conditions and checks them at finalisation, as Cloud
// Storage does.
func TestStreamConditionAtCommit(t *testing.T) {
	b, _ := streamBucket(t)
	ctx := t.Context()
	v0, err := b.Put(ctx, "m", []byte("first"), driver.PutOptions{If: driver.IfAbsent()})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		key  string
		cond driver.Condition
	}{{"a", driver.IfAbsent()}, {"m", driver.IfMatch(v0.Version)}} {
		other := []byte("the other writer's object")
		var otherV driver.Version
		opts := *oneAtATime
		calls := 0
		opts.MayStart = func() error {
			if calls++; calls == 4 { // before the final request's commit
				v, err := b.Put(ctx, c.key, other, driver.PutOptions{})
				if err != nil {
					return err
				}
				otherV = v.Version
			}
			return nil
		}
		_, err := b.PutStream(ctx, c.key, unknownLength(body(testChunk*2+7, 3)), driver.PutOptions{If: c.cond}, &opts)
		var ge *googleapi.Error
		if !errors.Is(err, driver.ErrPrecondition) || !errors.As(err, &ge) || ge.Code != http.StatusPreconditionFailed {
			t.Fatalf("streamed %s whose condition broke before the final request: %v; want ErrPrecondition from a 412", c.cond, err)
		}
		if got, v := read(t, b, c.key); !bytes.Equal(got, other) || v != otherV {
			t.Errorf("after the refused commit %s holds %q at %s; want the other writer's object at %s", c.key, got, v, otherV)
		}
	}
}

// TestStreamRefused: a streamed IfAbsent over an existing key, and a
// streamed IfMatch of a stale version, are refused (ErrPrecondition, the
// 412 in the chain) and leave the object as it was, whether the body is
// one request or a resumable upload; IfMatch of the current version
// succeeds.
func TestStreamRefused(t *testing.T) {
	b, _ := streamBucket(t)
	ctx := t.Context()
	stale, err := b.Put(ctx, "k", []byte("one"), driver.PutOptions{If: driver.IfAbsent()})
	if err != nil {
		t.Fatal(err)
	}
	cur, err := b.Put(ctx, "k", []byte("two"), driver.PutOptions{If: driver.IfMatch(stale.Version)})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{10, testChunk + 10} {
		for _, cond := range []driver.Condition{driver.IfAbsent(), driver.IfMatch(stale.Version)} {
			_, err := b.PutStream(ctx, "k", unknownLength(body(n, 4)), driver.PutOptions{If: cond}, oneAtATime)
			var ge *googleapi.Error
			if !errors.Is(err, driver.ErrPrecondition) || !errors.As(err, &ge) || ge.Code != http.StatusPreconditionFailed {
				t.Errorf("streamed %d bytes under %s: %v; want ErrPrecondition from a 412", n, cond, err)
			}
			if got, v := read(t, b, "k"); string(got) != "two" || v != cur.Version {
				t.Errorf("after a refused %s the object is %q at %s", cond, got, v)
			}
		}
	}
	want := body(testChunk+10, 5)
	v, err := b.PutStream(ctx, "k", unknownLength(want), driver.PutOptions{If: driver.IfMatch(cur.Version)}, oneAtATime)
	if err != nil {
		t.Fatalf("streamed IfMatch(current): %v", err)
	}
	if got, gv := read(t, b, "k"); !bytes.Equal(got, want) || gv != v.Version {
		t.Errorf("IfMatch(current) stored %d bytes at %s; want %d at %s", len(got), gv, len(want), v.Version)
	}
}

// cancelAfter is a body that cancels its context once n bytes were read.
type cancelAfter struct {
	r      io.Reader
	n      int
	cancel context.CancelFunc
}

func (c *cancelAfter) Read(p []byte) (int, error) {
	if c.n <= 0 {
		c.cancel()
	}
	p = p[:min(len(p), max(c.n, 1))]
	n, err := c.r.Read(p)
	c.n -= n
	return n, err
}

// TestStreamCanceledMidBody: a context cancelled after a chunk and a half
// ends the upload with an error matching context.Canceled, and leaves no
// object.
func TestStreamCanceledMidBody(t *testing.T) {
	b, _ := streamBucket(t)
	for _, cond := range []driver.Condition{{}, driver.IfAbsent()} {
		ctx, cancel := context.WithCancel(t.Context())
		r := &cancelAfter{r: bytes.NewReader(body(testChunk*3, 6)), n: testChunk + testChunk/2, cancel: cancel}
		_, err := b.PutStream(ctx, "k", r, driver.PutOptions{If: cond}, oneAtATime)
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("PutStream (%s) cancelled mid-body: %v; want context.Canceled", cond, err)
		}
		if _, _, err := b.Get(t.Context(), "k", driver.GetOptions{}); !errors.Is(err, driver.ErrNotExist) {
			t.Errorf("after a cancelled upload, Get: %v; want ErrNotExist", err)
		}
	}
}

// TestStreamLeavesNoGoroutine: streamed writes that succeed, are refused by
// MayStart mid-body, are cancelled mid-body, or are refused at the commit
// leave no goroutine behind once they have returned (the count is polled
// within a bound for the connection and watcher goroutines that end just
// after).
func TestStreamLeavesNoGoroutine(t *testing.T) {
	b, _ := streamBucket(t)
	ctx := t.Context()
	if _, err := b.Put(ctx, "exists", []byte("x"), driver.PutOptions{If: driver.IfAbsent()}); err != nil {
		t.Fatal(err)
	}
	refused := errors.New("refused")
	round := func(i int) {
		n := testChunk + testChunk/2
		_, _ = b.PutStream(ctx, fmt.Sprintf("ok-%d", i), unknownLength(body(n, 9)), driver.PutOptions{}, oneAtATime)
		opts := *oneAtATime
		calls := 0
		opts.MayStart = func() error {
			if calls++; calls == 2 {
				return refused
			}
			return nil
		}
		_, _ = b.PutStream(ctx, "refused", unknownLength(body(n, 9)), driver.PutOptions{}, &opts)
		cctx, cancel := context.WithCancel(ctx)
		_, _ = b.PutStream(cctx, "canceled", &cancelAfter{r: bytes.NewReader(body(n, 9)), n: testChunk + 10, cancel: cancel}, driver.PutOptions{}, oneAtATime)
		cancel()
		_, _ = b.PutStream(ctx, "exists", unknownLength(body(n, 9)), driver.PutOptions{If: driver.IfAbsent()}, oneAtATime)
	}
	round(0)
	base := leakcheck.Steady()
	for i := range 2 {
		round(i + 1)
	}
	if n := leakcheck.Settle(base + 2); n > base+2 {
		t.Errorf("after 8 streamed writes: %d goroutines, %d before", n, base)
	}
}

// TestStreamErrorSaysSessionIsLeft: the client library cancels a failed
// resumable upload's requests but cannot delete its session, so no abort
// is sent (no DELETE reaches the wire), and the error says so and what
// becomes of the session (Cloud Storage discards it 7 days after it
// started), never that an abort was tried. Before the final request it
// says nothing was committed; at a refused final request, that the
// session is left unfinalised unless that request landed.
func TestStreamErrorSaysSessionIsLeft(t *testing.T) {
	const left = "no abort was sent, the driver having no call that removes what it had staged: "
	const expiry = "Cloud Storage discards it, with the chunks it received, 7 days after it started"
	for _, c := range []struct {
		name, want string
		refuse     int // MayStart refuses its call number refuse (0: never)
		exists     bool
	}{
		{"before the session", "; nothing had been staged", 1, false},
		{"before chunk 2", left + "nothing was committed; the resumable session's requests were cancelled before its final one, and " + expiry, 2, false},
		{"before the final request", left + "nothing was committed; the resumable session's requests were cancelled before its final one, and " + expiry, 4, false},
		{"a refused final request", left + "the resumable session's final request failed; unless it landed, the session is left unfinalised, and " + expiry, 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, rc := streamBucket(t)
			if c.exists {
				if _, err := b.Put(t.Context(), "k", []byte("there"), driver.PutOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			calls := 0
			opts := *oneAtATime
			opts.MayStart = func() error {
				if calls++; calls == c.refuse {
					return errors.New("fenced")
				}
				return nil
			}
			_, err := b.PutStream(t.Context(), "k", unknownLength(body(testChunk*2+100, 9)), driver.PutOptions{If: driver.IfAbsent()}, &opts)
			var ue *multipart.UploadError
			if !errors.As(err, &ue) {
				t.Fatalf("%v; want a *multipart.UploadError", err)
			}
			msg := err.Error()
			t.Log(msg)
			if !strings.Contains(msg, c.want) {
				t.Errorf("%q; want it to say %q", msg, c.want)
			}
			if strings.Contains(msg, "abort") && !strings.Contains(msg, "no abort was sent") || ue.Aborted || ue.AbortErr != nil {
				t.Errorf("%q (Aborted %v, AbortErr %v) speaks of an abort; none exists", msg, ue.Aborted, ue.AbortErr)
			}
			if c.exists && !errors.Is(err, driver.ErrPrecondition) {
				t.Errorf("%q; want ErrPrecondition", msg)
			}
			rc.mu.Lock()
			defer rc.mu.Unlock()
			for _, m := range rc.methods {
				if strings.HasPrefix(m, http.MethodDelete) {
					t.Errorf("a %s request was sent (%v); the driver has no abort to send", m, rc.methods)
				}
			}
		})
	}
}
