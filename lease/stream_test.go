package lease_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/clock"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/mem"
	"github.com/mushroomdb/bucketlease/internal/objects"
	"github.com/mushroomdb/bucketlease/lease"
)

// gatedReader yields n bytes per Read, and blocks before each Read after
// the first until the test sends on next, so that a test can act between
// parts of a streamed upload.
type gatedReader struct {
	left, n int
	next    chan struct{}
	first   bool
}

func (g *gatedReader) Read(p []byte) (int, error) {
	if g.left == 0 {
		return 0, io.EOF
	}
	if g.first {
		<-g.next
	}
	g.first = true
	n := min(len(p), g.n, g.left)
	for i := range p[:n] {
		p[i] = byte(i)
	}
	g.left -= n
	return n, nil
}

// A streamed upload through Lease.Bucket starts no part once the holder
// may not write, is aborted, leaves no object, and Release waits for it.
func TestStreamedUploadUnderTheFence(t *testing.T) {
	ctx := context.Background()
	b := machineClocksOnly()
	c := clock.NewFake(t0)
	l := acquire(t, b, "A", c)
	part := int64(driver.MinPartSize)
	body := &gatedReader{left: int(4 * part), n: int(part), next: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		_, err := l.Bucket().Driver().PutStream(ctx, "chunks/big", body, driver.PutOptions{If: driver.IfAbsent()}, &driver.StreamOptions{PartSize: part, Concurrency: 1})
		done <- err
	}()
	body.next <- struct{}{} // the second part is read
	c.Advance(ttl * 2 / 3)  // the fence: no renewal
	if l.MayWrite() {
		t.Fatal("may still write past the fence")
	}
	released := make(chan error, 1)
	go func() { released <- l.Release(ctx) }()
	// Release may return only after the upload has: the upload is either
	// stopped by its cancelled context, or still blocked in its body.
	var err error
	gotErr := false
	select {
	case rerr := <-released:
		select {
		case err = <-done:
			gotErr = true
		default:
			t.Fatalf("Release returned (%v) before the upload it cancelled", rerr)
		}
		if rerr != nil {
			t.Fatalf("release: %v", rerr)
		}
		close(body.next)
	case <-time.After(50 * time.Millisecond):
		close(body.next) // the body would go on; the upload must not
		if rerr := <-released; rerr != nil {
			t.Fatalf("release: %v", rerr)
		}
	}
	if !gotErr {
		err = <-done
	}
	if !errors.Is(err, lease.ErrFenced) && !errors.Is(err, lease.ErrReleased) && !errors.Is(err, context.Canceled) {
		t.Fatalf("the upload past the fence: %v, want an error naming the fence", err)
	}
	if _, _, err := b.Get(ctx, "db1/chunks/big", driver.GetOptions{}); !errors.Is(err, driver.ErrNotExist) {
		t.Fatalf("an upload cut off by the fence left an object: %v", err)
	}
}

// A streamed upload through Lease.Bucket that runs to its end under a held
// lease commits under its condition, and a second IfAbsent one is refused.
func TestStreamedUploadUnderAHeldLease(t *testing.T) {
	ctx := context.Background()
	b := machineClocksOnly()
	l := acquire(t, b, "A", clock.NewFake(t0))
	body := bytes.Repeat([]byte("x"), 3*driver.MinPartSize+17)
	a, err := l.Bucket().Driver().PutStream(ctx, "chunks/1", bytes.NewReader(body), driver.PutOptions{If: driver.IfAbsent()}, &driver.StreamOptions{PartSize: driver.MinPartSize})
	if err != nil {
		t.Fatal(err)
	}
	v := a.Version
	got, ga, err := objects.ReadAll(ctx, b, "db1/chunks/1", 1<<30, driver.GetOptions{})
	gv := ga.Version
	if err != nil || !bytes.Equal(got, body) || gv != v {
		t.Fatalf("stored %d bytes at %s (err %v), want %d at %s", len(got), gv, err, len(body), v)
	}
	if _, err := l.Bucket().Driver().PutStream(ctx, "chunks/1", bytes.NewReader(body), driver.PutOptions{If: driver.IfAbsent()}, nil); !errors.Is(err, driver.ErrPrecondition) {
		t.Fatalf("a second IfAbsent upload: %v", err)
	}
	if _, err := l.Bucket().Driver().PutStream(ctx, "LEASE", bytes.NewReader(body), driver.PutOptions{}, nil); err == nil {
		t.Fatal("a streamed write to the lease object itself was accepted")
	}
	var keys []string
	for o, err := range l.Bucket().Driver().List(ctx, "") {
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, o.Key)
	}
	if len(keys) != 1 || keys[0] != "chunks/1" {
		t.Fatalf("Lease.Bucket lists %q, want the relative key alone (not LEASE)", keys)
	}
}

// commitIgnoresCondition streams through mem but drops the condition of
// an upload of more than one part, as a service that ignores the
// preconditions on CompleteMultipartUpload would, while single PUTs keep
// theirs.
type commitIgnoresCondition struct{ *mem.Bucket }

func (c commitIgnoresCondition) PutStream(ctx context.Context, key string, r io.Reader, opts driver.PutOptions, s *driver.StreamOptions) (driver.Attrs, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return driver.Attrs{}, err
	}
	if int64(len(data)) > s.Size() {
		opts.If = driver.Condition{}
	}
	return c.Bucket.Put(ctx, key, data, opts)
}

// A service that ignores the condition at a streamed upload's commit: the
// lease proves it before the first conditional streamed write, and refuses
// such writes rather than commit them unconditionally.
func TestStreamedCommitThatIgnoresItsConditionFailsClosed(t *testing.T) {
	ctx := context.Background()
	for _, honest := range []bool{true, false} {
		var b driver.Bucket = machineClocksOnly()
		if !honest {
			b = commitIgnoresCondition{machineClocksOnly()}
		}
		l := acquire(t, b, "A", clock.NewFake(t0))
		_, err := l.Bucket().Driver().PutStream(ctx, "chunks/1", bytes.NewReader([]byte("small")), driver.PutOptions{If: driver.IfAbsent()}, nil)
		switch {
		case honest && err != nil:
			t.Fatalf("an honest streamer: %v", err)
		case !honest && !errors.Is(err, lease.ErrPreconditionsIgnored):
			t.Fatalf("a streamer ignoring the commit's condition: %v, want ErrPreconditionsIgnored", err)
		}
		if _, err := l.Bucket().Driver().PutStream(ctx, "chunks/2", bytes.NewReader([]byte("x")), driver.PutOptions{}, nil); err != nil {
			t.Fatalf("an unconditional streamed write (honest %v): %v", honest, err)
		}
		for o, err := range b.List(ctx, "db1/LEASE.") {
			t.Fatalf("the probe left %q behind (%v)", o.Key, err)
		}
	}
}

// probeDeleteHangs is mem whose Delete of the stream probe's scratch key
// never answers: it returns only when its context ends.
type probeDeleteHangs struct {
	*mem.Bucket
	hung chan struct{}
}

func (h probeDeleteHangs) Delete(ctx context.Context, key string, cond driver.Condition) error {
	if !strings.Contains(key, ".stream-probe-") {
		return h.Bucket.Delete(ctx, key, cond)
	}
	select {
	case h.hung <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return ctx.Err()
}

// The clean-up of the streamed-commit probe is bounded: a DELETE of the
// probe key that never answers keeps neither the streamed write (whose
// context ended meanwhile) from returning nor Release from completing.
func TestStreamProbeCleanupIsBounded(t *testing.T) {
	b := probeDeleteHangs{Bucket: machineClocksOnly(), hung: make(chan struct{}, 1)}
	l := acquire(t, b, "A", clock.NewFake(t0))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := l.Bucket().Driver().PutStream(ctx, "chunks/1", bytes.NewReader([]byte("body")), driver.PutOptions{If: driver.IfAbsent()}, nil)
		done <- err
	}()
	// patience is far longer than the clean-up's bound (10 s), and short
	// enough that a hang fails the test rather than the test binary.
	const patience = 45 * time.Second
	select {
	case <-b.hung:
	case err := <-done:
		t.Fatalf("the streamed write returned (%v) without deleting its probe key", err)
	case <-time.After(patience):
		t.Fatal("the streamed write never deleted its probe key")
	}
	cancel() // the caller gives up while the DELETE hangs
	select {
	case <-done:
	case <-time.After(patience):
		t.Fatalf("PutStream had not returned %v after its context ended: the probe key's DELETE holds it without a bound", patience)
	}
	rctx, rcancel := context.WithTimeout(context.Background(), patience)
	defer rcancel()
	if err := l.Release(rctx); err != nil {
		t.Fatalf("Release after the streamed write returned: %v", err)
	}
}

// wholeOnly is mem behind a driver that cannot stage parts: its PutStream
// is one Put (driver.PutWhole). It counts its Deletes.
type wholeOnly struct {
	*mem.Bucket
	deletes *atomic.Int64
}

func (w wholeOnly) PutStream(ctx context.Context, key string, r io.Reader, opts driver.PutOptions, s *driver.StreamOptions) (driver.Attrs, error) {
	return driver.PutWhole(ctx, w, key, r, opts, s)
}

func (w wholeOnly) Delete(ctx context.Context, key string, cond driver.Condition) error {
	w.deletes.Add(1)
	return w.Bucket.Delete(ctx, key, cond)
}

// A conditional streamed write through Lease.Bucket on a driver that
// cannot stage parts is one conditional Put: the streamed-commit probe
// sends nothing there (the acquire's probe proved the conditional Put), so
// nothing is left to delete, and the condition still holds.
func TestStreamedWriteOnADriverWithoutPartsIsOnePut(t *testing.T) {
	ctx := context.Background()
	b := wholeOnly{machineClocksOnly(), &atomic.Int64{}}
	l := acquire(t, b, "A", clock.NewFake(t0))
	before := b.deletes.Load()
	for i, want := range []error{nil, driver.ErrPrecondition} {
		_, err := l.Bucket().Driver().PutStream(ctx, "chunks/1", bytes.NewReader([]byte("small")), driver.PutOptions{If: driver.IfAbsent()}, nil)
		if want == nil && err != nil || want != nil && !errors.Is(err, want) {
			t.Fatalf("conditional streamed write %d: %v, want %v", i+1, err, want)
		}
	}
	if n := b.deletes.Load() - before; n != 0 {
		t.Errorf("%d deletes: the streamed-commit probe wrote on a driver that cannot stage parts", n)
	}
	for o, err := range b.List(ctx, "db1/LEASE.") {
		t.Fatalf("the probe left %q behind (%v)", o.Key, err)
	}
}
