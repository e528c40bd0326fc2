package azure_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/azure"
	"github.com/mushroomdb/bucketlease/driver/multipart"
	"github.com/mushroomdb/bucketlease/internal/objects"
	"github.com/mushroomdb/bucketlease/internal/testsupport/leakcheck"
)

// The streamed writes below use the smallest part size, two blocks at once.
const block = driver.MinPartSize

var twoAtATime = &driver.StreamOptions{PartSize: block, Concurrency: 2}

// body returns n reproducible pseudo-random bytes.
func body(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8)}))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// unknownLength hides everything of b's reader but Read.
func unknownLength(b []byte) io.Reader { return struct{ io.Reader }{bytes.NewReader(b)} }

// requestCounter counts the Put Block and Put Block List requests sent
// through it, and the Put Block requests in flight.
type requestCounter struct {
	mu sync.Mutex
	c  counts
}

// counts are what a requestCounter counted.
type counts struct {
	blocks   int // Put Block requests started
	inFlight int // Put Block requests in flight
	commits  int // Put Block List requests started
	puts     int // Put Blob requests started
}

func (c *requestCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	comp := r.URL.Query().Get("comp")
	c.mu.Lock()
	switch {
	case r.Method == http.MethodPut && comp == "block":
		c.c.blocks++
		c.c.inFlight++
	case r.Method == http.MethodPut && comp == "blocklist":
		c.c.commits++
	case r.Method == http.MethodPut && comp == "":
		c.c.puts++
	}
	c.mu.Unlock()
	resp, err := http.DefaultTransport.RoundTrip(r)
	if r.Method == http.MethodPut && comp == "block" {
		c.mu.Lock()
		c.c.inFlight--
		c.mu.Unlock()
	}
	return resp, err
}

func (c *requestCounter) snapshot() counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.c
}

// streamBucket returns a fresh Azurite container, reached through a
// counter of its requests.
func streamBucket(t *testing.T) (*azure.Bucket, *requestCounter) {
	t.Helper()
	cs := emulator(t)
	rc := &requestCounter{}
	return azure.New(containerClient(t, cs, newContainer(t, cs), rc)), rc
}

// read returns key's body and version.
func read(t *testing.T, b driver.Bucket, key string) ([]byte, driver.Version) {
	t.Helper()
	data, ga, err := objects.ReadAll(t.Context(), b, key, 64<<20, driver.GetOptions{})
	if err != nil {
		t.Fatalf("read %s: %v", key, err)
	}
	return data, ga.Version
}

// TestStreamRoundTrip: bodies of unknown length (empty, shorter than a
// block: one Put Blob; two and a half blocks, and exactly two: staged
// blocks and a Put Block List) come back byte for byte, with the version
// PutStream returned equal to Get's, which works in the next IfMatch.
func TestStreamRoundTrip(t *testing.T) {
	b, rc := streamBucket(t)
	for i, c := range []struct{ n, blocks int }{{0, 0}, {1000, 0}, {block*2 + block/2, 3}, {block * 2, 2}} {
		key := fmt.Sprintf("db1/chunk-%d", i)
		want := body(c.n, uint64(i))
		before := rc.snapshot()
		put, err := b.PutStream(t.Context(), key, unknownLength(want), driver.PutOptions{If: driver.IfAbsent()}, twoAtATime)
		v := put.Version
		if err != nil {
			t.Fatalf("PutStream of %d bytes: %v", c.n, err)
		}
		after := rc.snapshot()
		if blocks := after.blocks - before.blocks; blocks != c.blocks || (c.blocks > 0) != (after.commits > before.commits) {
			t.Errorf("%d bytes: %d blocks staged and %d commits; want %d blocks", c.n, blocks, after.commits-before.commits, c.blocks)
		}
		got, gv := read(t, b, key)
		if !bytes.Equal(got, want) {
			t.Errorf("%d bytes streamed, %d read back, or different bytes", c.n, len(got))
		}
		if gv != v {
			t.Errorf("PutStream returned version %s, Get %s", v, gv)
		}
		if _, err := b.PutStream(t.Context(), key, strings.NewReader("small"), driver.PutOptions{If: driver.IfMatch(v)}, twoAtATime); err != nil {
			t.Errorf("PutStream IfMatch(the version PutStream returned): %v", err)
		}
	}
}

// TestStreamMayStart: MayStart is asked before each block is staged (so
// no more blocks have reached the service than calls before it; fewer, on
// a loaded machine, where a block's request is still on its way) and before
// the commit, when no block is in flight any more; a refusal stops the
// upload: nothing more is started, nothing is committed, and the error
// wraps the refusal and says how many blocks were left uncommitted.
func TestStreamMayStart(t *testing.T) {
	b, rc := streamBucket(t)
	n := block*3 + 10 // four blocks
	calls := 0
	opts := *twoAtATime
	opts.MayStart = func() error {
		s := rc.snapshot()
		if calls < 4 && s.blocks > calls {
			t.Errorf("MayStart call %d: %d blocks started before it; want at most %d", calls+1, s.blocks, calls)
		}
		if calls == 4 && (s.inFlight != 0 || s.commits != 0 || s.blocks != 4) {
			t.Errorf("MayStart before the commit: %+v; want the 4 blocks done and no commit yet", s)
		}
		calls++
		return nil
	}
	if _, err := b.PutStream(t.Context(), "k", unknownLength(body(n, 1)), driver.PutOptions{If: driver.IfAbsent()}, &opts); err != nil {
		t.Fatal(err)
	}
	if calls != 5 {
		t.Errorf("MayStart called %d times for four blocks and the commit", calls)
	}

	refused := errors.New("the lease may not write")
	for _, at := range []int{1, 2, 5} {
		key := fmt.Sprintf("refused-%d", at)
		calls := 0
		before := rc.snapshot()
		opts.MayStart = func() error {
			if calls++; calls == at {
				return refused
			}
			return nil
		}
		_, err := b.PutStream(t.Context(), key, unknownLength(body(n, 2)), driver.PutOptions{If: driver.IfAbsent()}, &opts)
		var ue *multipart.UploadError
		if !errors.Is(err, refused) || !errors.As(err, &ue) || !strings.Contains(err.Error(), "put "+key) {
			t.Fatalf("PutStream refused by MayStart at call %d: %v; want the refusal inside a *multipart.UploadError, naming the key", at, err)
		}
		if ue.Staged != (at > 1) || (at > 1 && !strings.Contains(err.Error(), "left uncommitted")) || strings.Contains(err.Error(), "canceled") {
			t.Errorf("refused at call %d: Staged = %v in %q", at, ue.Staged, err)
		}
		if calls != at {
			t.Errorf("MayStart asked %d times after it refused", calls-at)
		}
		// MayStart call k comes before block k (and call 5 before the
		// commit), so at most at-1 blocks may reach the wire and no
		// commit. (A snapshot taken at the refusal would not do: a block
		// the driver started just before it may enter the transport just
		// after.)
		if s := rc.snapshot(); s.blocks-before.blocks > at-1 || s.commits != before.commits {
			t.Errorf("refused at call %d: %d blocks and %d commits sent; want at most %d blocks and no commit",
				at, s.blocks-before.blocks, s.commits-before.commits, at-1)
		}
		if _, _, err := b.Get(t.Context(), key, driver.GetOptions{}); !errors.Is(err, driver.ErrNotExist) {
			t.Errorf("after a refused upload, Get: %v; want ErrNotExist", err)
		}
	}
}

// TestStreamConditionAtCommit: the condition is checked by the Put Block
// List that commits, not when blocks are staged. The key is absent while a
// streamed IfAbsent stages its blocks and written by someone else just
// before its commit, which must be refused; likewise a streamed IfMatch of
// the version current when it started. The other writer's object is left
// as it was. Azurite 3.35.0 checks both conditions on Put Block List, as
// Blob Storage does.
func TestStreamConditionAtCommit(t *testing.T) {
	b, _ := streamBucket(t)
	ctx := t.Context()
	put, err := b.Put(ctx, "m", []byte("first"), driver.PutOptions{If: driver.IfAbsent()})
	v0 := put.Version
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		key  string
		cond driver.Condition
	}{{"a", driver.IfAbsent()}, {"m", driver.IfMatch(v0)}} {
		other := []byte("the other writer's object")
		var otherV driver.Version
		calls := 0
		opts := *twoAtATime
		opts.MayStart = func() error {
			if calls++; calls == 4 { // before the commit
				put, err := b.Put(ctx, c.key, other, driver.PutOptions{})
				v := put.Version
				if err != nil {
					return err
				}
				otherV = v
			}
			return nil
		}
		_, err := b.PutStream(ctx, c.key, unknownLength(body(block*2+7, 3)), driver.PutOptions{If: c.cond}, &opts)
		var re *azcore.ResponseError
		if !errors.Is(err, driver.ErrPrecondition) || !errors.As(err, &re) {
			t.Fatalf("streamed %s whose condition broke before the commit: %v; want ErrPrecondition with the service's error", c.cond, err)
		}
		t.Logf("%s refused at the commit with HTTP %d %s", c.cond, re.StatusCode, re.ErrorCode)
		if got, v := read(t, b, c.key); !bytes.Equal(got, other) || v != otherV {
			t.Errorf("after the refused commit %s holds %q at %s; want the other writer's object at %s", c.key, got, v, otherV)
		}
	}
}

// TestStreamRefused: a streamed IfAbsent over an existing key and a
// streamed IfMatch of a stale version are refused (ErrPrecondition) and
// leave the blob as it was, for one Put Blob and for staged blocks.
func TestStreamRefused(t *testing.T) {
	b, _ := streamBucket(t)
	ctx := t.Context()
	put, err := b.Put(ctx, "k", []byte("one"), driver.PutOptions{If: driver.IfAbsent()})
	stale := put.Version
	if err != nil {
		t.Fatal(err)
	}
	put, err = b.Put(ctx, "k", []byte("two"), driver.PutOptions{If: driver.IfMatch(stale)})
	cur := put.Version
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{10, block + 10} {
		for _, cond := range []driver.Condition{driver.IfAbsent(), driver.IfMatch(stale)} {
			_, err := b.PutStream(ctx, "k", unknownLength(body(n, 4)), driver.PutOptions{If: cond}, twoAtATime)
			var re *azcore.ResponseError
			if !errors.Is(err, driver.ErrPrecondition) || !errors.As(err, &re) {
				t.Errorf("streamed %d bytes under %s: %v; want ErrPrecondition with the service's error", n, cond, err)
			}
			if got, v := read(t, b, "k"); string(got) != "two" || v != cur {
				t.Errorf("after a refused %s the blob is %q at %s", cond, got, v)
			}
		}
	}
}

// TestStreamConcurrentUploadsDoNotMix: two uploads stage their blocks on
// one blob at the same time, and one commits first. Their block IDs differ
// (a random prefix per upload), so the other's commit cannot take the
// first's blocks: the service discarded its own at the first commit, and
// its commit fails (ErrPrecondition under IfAbsent, since the blob exists
// now; a plain error unconditionally) or, where a service keeps them,
// commits only its own. Either way the blob is one upload's whole body.
func TestStreamConcurrentUploadsDoNotMix(t *testing.T) {
	b, _ := streamBucket(t)
	ctx := t.Context()
	for _, cond := range []driver.Condition{{}, driver.IfAbsent()} {
		key := "mixed-" + strings.ReplaceAll(cond.String(), " ", "")
		bodyA, bodyB := body(block*2+100, 10), body(block*2+200, 11)
		bStaged := make(chan struct{})
		aDone := make(chan struct{})
		gate := func(staged chan struct{}, wait chan struct{}) func() error {
			calls := 0
			return func() error {
				if calls++; calls == 4 { // before the commit
					if staged != nil {
						close(staged)
					}
					if wait != nil {
						select {
						case <-wait:
						case <-ctx.Done():
						}
					}
				}
				return nil
			}
		}
		optsA, optsB := *twoAtATime, *twoAtATime
		optsA.MayStart = gate(nil, bStaged) // A commits once B has staged all its blocks
		optsB.MayStart = gate(bStaged, aDone)
		var errB error
		var wg sync.WaitGroup
		wg.Go(func() { _, errB = b.PutStream(ctx, key, unknownLength(bodyB), driver.PutOptions{If: cond}, &optsB) })
		put, errA := b.PutStream(ctx, key, unknownLength(bodyA), driver.PutOptions{If: cond}, &optsA)
		vA := put.Version
		close(aDone)
		wg.Wait()
		if errA != nil {
			t.Fatalf("%s: the first commit: %v", cond, errA)
		}
		got, v := read(t, b, key)
		switch {
		case errB == nil:
			t.Logf("%s: the second commit succeeded too", cond)
			if !bytes.Equal(got, bodyB) {
				t.Errorf("%s: both commits succeeded, and the blob (%d bytes) is not the second's body", cond, len(got))
			}
		case !bytes.Equal(got, bodyA) || v != vA:
			t.Errorf("%s: the second commit failed (%v), and the blob (%d bytes at %s) is not the first's body (at %s)", cond, errB, len(got), v, vA)
		case cond == driver.IfAbsent() && !errors.Is(errB, driver.ErrPrecondition):
			t.Errorf("%s: the second commit: %v; want ErrPrecondition", cond, errB)
		case cond == (driver.Condition{}) && !strings.Contains(errB.Error(), "discarded"):
			t.Errorf("%s: the second commit: %v; want an error saying its blocks were discarded", cond, errB)
		default:
			t.Logf("%s: the second commit: %v", cond, errB)
		}
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

// TestStreamCanceledMidBody: a context cancelled after a block and a half
// ends the upload with an error matching context.Canceled, and commits
// nothing.
func TestStreamCanceledMidBody(t *testing.T) {
	b, rc := streamBucket(t)
	for _, cond := range []driver.Condition{{}, driver.IfAbsent()} {
		ctx, cancel := context.WithCancel(t.Context())
		r := &cancelAfter{r: bytes.NewReader(body(block*3, 6)), n: block + block/2, cancel: cancel}
		before := rc.snapshot()
		_, err := b.PutStream(ctx, "k", r, driver.PutOptions{If: cond}, twoAtATime)
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("PutStream (%s) cancelled mid-body: %v; want context.Canceled", cond, err)
		}
		if s := rc.snapshot(); s.commits != before.commits || s.inFlight != 0 {
			t.Errorf("after the cancelled upload: %+v; want no commit and no block in flight", s)
		}
		if _, _, err := b.Get(t.Context(), "k", driver.GetOptions{}); !errors.Is(err, driver.ErrNotExist) {
			t.Errorf("after a cancelled upload, Get: %v; want ErrNotExist", err)
		}
	}
}

// cancelOnResponse cancels a context once the response to a request that
// matches arrives, before the SDK sees it.
type cancelOnResponse struct {
	match  func(*http.Request) bool
	cancel context.CancelFunc
}

func (c *cancelOnResponse) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && c.match(r) {
		c.cancel()
	}
	return resp, err
}

// TestCanceledAfterTheServiceAnswered: the SDK's retry policy reports the
// context's end in place of a response it received, a successful one
// included. A write the service did (Put Blob, Put Block List, Delete
// Blob) whose context ends as its answer arrives is reported as done, not
// as cancelled with the object changed.
func TestCanceledAfterTheServiceAnswered(t *testing.T) {
	cs := emulator(t)
	name := newContainer(t, cs)
	for _, c := range []struct {
		what  string
		match func(*http.Request) bool
		write func(ctx context.Context, b *azure.Bucket) error
		want  []byte // nil: deleted
	}{
		{"Put", func(r *http.Request) bool { return r.Method == http.MethodPut }, func(ctx context.Context, b *azure.Bucket) error {
			_, err := b.Put(ctx, "k", []byte("put"), driver.PutOptions{})
			return err
		}, []byte("put")},
		{"PutStream", func(r *http.Request) bool { return r.URL.Query().Get("comp") == "blocklist" }, func(ctx context.Context, b *azure.Bucket) error {
			_, err := b.PutStream(ctx, "k", unknownLength(body(block+1, 7)), driver.PutOptions{If: driver.Condition{}}, twoAtATime)
			return err
		}, body(block+1, 7)},
		{"Delete", func(r *http.Request) bool { return r.Method == http.MethodDelete }, func(ctx context.Context, b *azure.Bucket) error {
			return b.Delete(ctx, "k", driver.Condition{})
		}, nil},
	} {
		ctx, cancel := context.WithCancel(t.Context())
		b := azure.New(containerClient(t, cs, name, &cancelOnResponse{match: c.match, cancel: cancel}))
		err := c.write(ctx, b)
		if ctx.Err() == nil {
			t.Fatalf("%s: setup: the context was not cancelled", c.what)
		}
		cancel()
		if err != nil {
			t.Errorf("%s whose context ended as the service's success arrived: %v; want success", c.what, err)
		}
		plain := azure.New(containerClient(t, cs, name, nil))
		got, _, err := objects.ReadAll(t.Context(), plain, "k", 64<<20, driver.GetOptions{})
		if c.want == nil && !errors.Is(err, driver.ErrNotExist) || c.want != nil && !bytes.Equal(got, c.want) {
			t.Errorf("after %s: %d bytes (%v)", c.what, len(got), err)
		}
	}
}

// TestStreamBlocksDiscarded: a service that answers the commit with 400
// InvalidBlockList (the upload's blocks were discarded: another writer
// committed the blob after they were staged, or deleted it) is refused
// with ErrPrecondition only where the blob as it is now breaks the
// condition; otherwise the error says the blocks were discarded. Azurite
// checks the condition first and never gets here, so a loopback server
// plays the service.
func TestStreamBlocksDiscarded(t *testing.T) {
	for _, c := range []struct {
		name   string
		cond   driver.Condition
		exists bool
		want   error
	}{
		{"IfAbsent, the blob exists now", driver.IfAbsent(), true, driver.ErrPrecondition},
		{"IfAbsent, the blob was deleted", driver.IfAbsent(), false, nil},
		{"IfMatch, another version now", driver.IfMatch(`"0x8DC0000000000001"`), true, driver.ErrPrecondition},
		{"IfMatch, the blob was deleted", driver.IfMatch(`"0x8DC0000000000001"`), false, driver.ErrPrecondition},
		{"unconditional", driver.Condition{}, true, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("x-ms-version", "2025-01-05")
				switch {
				case r.Method == http.MethodPut && r.URL.Query().Get("comp") == "block":
					w.WriteHeader(http.StatusCreated)
				case r.Method == http.MethodPut && r.URL.Query().Get("comp") == "blocklist":
					w.Header().Set("x-ms-error-code", "InvalidBlockList")
					w.Header().Set("Content-Type", "application/xml")
					w.WriteHeader(http.StatusBadRequest)
					_, _ = io.WriteString(w, `<?xml version="1.0" encoding="utf-8"?><Error><Code>InvalidBlockList</Code><Message>The specified block list is invalid.</Message></Error>`)
				case r.Method == http.MethodHead && c.exists:
					w.Header().Set("ETag", `"0x8DC0000000000002"`)
					w.WriteHeader(http.StatusOK)
				case r.Method == http.MethodHead:
					w.Header().Set("x-ms-error-code", "BlobNotFound")
					w.WriteHeader(http.StatusNotFound)
				default:
					http.Error(w, "unexpected", http.StatusTeapot)
				}
			}))
			defer srv.Close()
			cc, err := container.NewClientWithNoCredential(srv.URL+"/acct/cnt", &container.ClientOptions{
				ClientOptions: azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}})
			if err != nil {
				t.Fatal(err)
			}
			_, err = azure.New(cc).PutStream(t.Context(), "k", unknownLength(body(block+1, 8)), driver.PutOptions{If: c.cond}, twoAtATime)
			var re *azcore.ResponseError
			if err == nil || !errors.As(err, &re) || re.ErrorCode != "InvalidBlockList" || !strings.Contains(err.Error(), "discarded") {
				t.Fatalf("a commit answered InvalidBlockList: %v; want an error saying the blocks were discarded, with the service's error", err)
			}
			if c.want != nil && !errors.Is(err, c.want) || c.want == nil && errors.Is(err, driver.ErrPrecondition) {
				t.Errorf("a commit answered InvalidBlockList: %v; want kind %v", err, c.want)
			}
		})
	}
}

// TestStreamLeavesNoGoroutine: streamed writes that succeed, are refused by
// MayStart mid-body, are cancelled mid-body, or are refused at the commit
// leave no goroutine behind once they have returned (the count is polled
// within a bound for connection goroutines that end just after).
func TestStreamLeavesNoGoroutine(t *testing.T) {
	b, _ := streamBucket(t)
	ctx := t.Context()
	if _, err := b.Put(ctx, "exists", []byte("x"), driver.PutOptions{If: driver.IfAbsent()}); err != nil {
		t.Fatal(err)
	}
	refused := errors.New("refused")
	round := func(i int) {
		n := block*2 + 10
		_, _ = b.PutStream(ctx, fmt.Sprintf("ok-%d", i), unknownLength(body(n, 9)), driver.PutOptions{If: driver.Condition{}}, twoAtATime)
		opts := *twoAtATime
		calls := 0
		opts.MayStart = func() error {
			if calls++; calls == 2 {
				return refused
			}
			return nil
		}
		_, _ = b.PutStream(ctx, "refused", unknownLength(body(n, 9)), driver.PutOptions{If: driver.Condition{}}, &opts)
		cctx, cancel := context.WithCancel(ctx)
		_, _ = b.PutStream(cctx, "canceled", &cancelAfter{r: bytes.NewReader(body(n, 9)), n: block + 10, cancel: cancel}, driver.PutOptions{If: driver.Condition{}}, twoAtATime)
		cancel()
		_, _ = b.PutStream(ctx, "exists", unknownLength(body(n, 9)), driver.PutOptions{If: driver.IfAbsent()}, twoAtATime)
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

// TestStreamErrorSaysBlocksAreLeft: Blob Storage has no call that discards
// staged blocks, so a failed streamed write sends no abort, and its error
// says so and what becomes of the blocks (left uncommitted until the
// service discards them), never that an abort was tried. Before the
// commit it says nothing was committed; at a refused commit, that the
// blocks were sent to be committed. Azurite's uncommitted block list shows
// the blocks the message names.
func TestStreamErrorSaysBlocksAreLeft(t *testing.T) {
	cs := emulator(t)
	cc := containerClient(t, cs, newContainer(t, cs), nil)
	b := azure.New(cc)
	ctx := t.Context()
	uncommitted := func(key string) int {
		t.Helper()
		bl, err := cc.NewBlockBlobClient(key).GetBlockList(ctx, blockblob.BlockListTypeUncommitted, nil)
		if err != nil {
			t.Fatalf("Get Block List of %s: %v", key, err)
		}
		return len(bl.UncommittedBlocks)
	}
	const left = "no abort was sent, the driver having no call that removes what it had staged: "
	const expiry = "Blob Storage discards them 7 days after the blob's last Put Block, or when the blob is next committed"
	for _, c := range []struct {
		name, want string
		refuse     int // MayStart refuses its call number refuse (0: never)
		cond       driver.Condition
		blocks     int // blocks left uncommitted
	}{
		{"before any block", "; nothing had been staged", 1, driver.IfAbsent(), 0},
		{"before block 3", left + "nothing was committed, and the 2 blocks it started (IDs bl", 3, driver.IfAbsent(), 2},
		{"before the commit", left + "nothing was committed, and the 3 blocks it started (IDs bl", 4, driver.IfAbsent(), 3},
		{"a refused commit", left + "the 3 blocks it started (IDs bl", 0, driver.IfAbsent(), 3},
	} {
		key := "k-" + strings.ReplaceAll(c.name, " ", "-")
		if c.refuse == 0 {
			if _, err := b.Put(ctx, key, []byte("there"), driver.PutOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		calls := 0
		opts := *twoAtATime
		opts.MayStart = func() error {
			if calls++; calls == c.refuse {
				return errors.New("fenced")
			}
			return nil
		}
		_, err := b.PutStream(ctx, key, unknownLength(body(block*2+5, 8)), driver.PutOptions{If: c.cond}, &opts)
		var ue *multipart.UploadError
		if !errors.As(err, &ue) {
			t.Fatalf("%s: %v; want a *multipart.UploadError", c.name, err)
		}
		msg := err.Error()
		t.Logf("%s: %s", c.name, msg)
		if !strings.Contains(msg, c.want) {
			t.Errorf("%s: %q; want it to say %q", c.name, msg, c.want)
		}
		if strings.Contains(msg, "abort") && !strings.Contains(msg, "no abort was sent") || ue.Aborted || ue.AbortErr != nil {
			t.Errorf("%s: %q (Aborted %v, AbortErr %v) speaks of an abort; none exists", c.name, msg, ue.Aborted, ue.AbortErr)
		}
		if c.blocks == 0 {
			continue
		}
		if c.refuse == 0 {
			if !errors.Is(err, driver.ErrPrecondition) || !strings.Contains(msg, "were sent to be committed; unless the commit landed, they are left uncommitted, and "+expiry) {
				t.Errorf("%s: %q; want ErrPrecondition, saying the blocks were sent to be committed and are otherwise left", c.name, msg)
			}
		} else if !strings.Contains(msg, "are left uncommitted: "+expiry) {
			t.Errorf("%s: %q; want it to say the blocks are left uncommitted until the service discards them", c.name, msg)
		}
		// A block in flight when MayStart refused is cancelled, so it may
		// not have been staged: the message counts the blocks started.
		if n := uncommitted(key); n > c.blocks || n < c.blocks-1 || n == 0 || c.refuse != 3 && n != c.blocks {
			t.Errorf("%s: Azurite holds %d uncommitted blocks of %s; the message says %d were started", c.name, n, key, c.blocks)
		}
	}
}
