package besteffort_test

import (
	"context"
	"errors"
	"io"
	"iter"
	"strings"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/besteffort"
	"github.com/mushroomdb/bucketlease/driver/mem"
	"github.com/mushroomdb/bucketlease/driver/multipart"
	"github.com/mushroomdb/bucketlease/drivertest"
	"github.com/mushroomdb/bucketlease/drivertest/faulty"
	"github.com/mushroomdb/bucketlease/internal/location"
	"github.com/mushroomdb/bucketlease/internal/objects"
)

// ignoring is a store that ignores the preconditions of every write: of
// Put (faulty.Bucket), and of PutStream, which streams in parts as mem
// does, with the condition dropped.
type ignoring struct {
	*faulty.Bucket
	streams *mem.Bucket
}

func (i ignoring) PutStream(ctx context.Context, key string, r io.Reader, opts driver.PutOptions, s *driver.StreamOptions) (driver.Attrs, error) {
	opts.If = driver.Condition{}
	return i.streams.PutStream(ctx, key, r, opts, s)
}

// Best-effort emulation passes every sequential check of the suite, even on
// a store that ignores preconditions, on Put and on streamed writes alike;
// the race checks do not apply to it, which is exactly what BestEffort
// declares.
func TestConformanceOverAnIgnoringStore(t *testing.T) {
	store := mem.New()
	inner := ignoring{&faulty.Bucket{Bucket: store, Ignore: faulty.IgnoreIfAbsent | faulty.IgnoreIfMatch}, store}
	b := besteffort.Wrap(inner)
	if got := b.Capabilities().Exclusion; got != driver.BestEffort {
		t.Fatalf("declares %v", got)
	}
	drivertest.Run(t, b, drivertest.Options{})
}

func TestReadThenWrite(t *testing.T) {
	ctx := context.Background()
	counting := &faulty.Counting{Bucket: mem.New()}
	b := besteffort.Wrap(counting)
	a, err := b.Put(ctx, "k", []byte("1"), driver.PutOptions{If: driver.IfAbsent()})
	v := a.Version
	if err != nil {
		t.Fatal(err)
	}
	if gets, puts, _ := counting.Counts(); gets != 1 || puts != 1 {
		t.Fatalf("IfAbsent cost %d reads and %d writes, want one of each", gets, puts)
	}
	if _, err := b.Put(ctx, "k", []byte("2"), driver.PutOptions{If: driver.IfMatch(objects.FakeVersion(v))}); !errors.Is(err, driver.ErrPrecondition) {
		t.Fatalf("IfMatch with a wrong version: %v", err)
	}
	if err := b.Delete(ctx, "k", driver.IfAbsent()); !errors.Is(err, driver.ErrUnsupported) {
		t.Fatalf("Delete IfAbsent: %v", err)
	}
	if u, ok := b.(interface{ Unwrap() driver.Bucket }); !ok || u.Unwrap() != counting {
		t.Fatal("Unwrap")
	}
}

// TestConformanceOverAStreamingStore: over a driver that streams and
// lists, the wrapper passes the streaming and listing checks through (the
// race checks do not apply to best effort).
func TestConformanceOverAStreamingStore(t *testing.T) {
	drivertest.Run(t, besteffort.Wrap(mem.New()), drivertest.Options{})
}

// abilities is a bucket with the optional interfaces (multipart.PendingLister,
// io.Closer) that counts the calls of those and of List and PutStream.
type abilities struct {
	driver.Bucket
	listed, streamed, pending, closed int
}

func (a *abilities) List(ctx context.Context, prefix string) iter.Seq2[driver.Object, error] {
	a.listed++
	return a.Bucket.List(ctx, prefix)
}

func (a *abilities) PutStream(ctx context.Context, key string, r io.Reader, opts driver.PutOptions, s *driver.StreamOptions) (driver.Attrs, error) {
	a.streamed++
	return a.Bucket.PutStream(ctx, key, r, opts, s)
}

func (a *abilities) ListPending(ctx context.Context, prefix string) iter.Seq2[multipart.Pending, error] {
	a.pending++
	return func(func(multipart.Pending, error) bool) {}
}

func (a *abilities) Close() error {
	a.closed++
	return nil
}

// TestWrapKeepsAbilities: the wrapper is a multipart.PendingLister exactly
// where the bucket it wraps is one, and its ListPending, Close, List and
// PutStream reach that bucket's; over a bucket without Close its Close
// closes nothing and succeeds.
func TestWrapKeepsAbilities(t *testing.T) {
	ctx := context.Background()
	plain := besteffort.Wrap(mem.New())
	if _, ok := plain.(multipart.PendingLister); ok {
		t.Error("over mem, which lists no pending uploads, the wrapper is a multipart.PendingLister")
	}
	if err := location.Close(plain); err != nil {
		t.Errorf("Close over mem: %v", err)
	}

	in := &abilities{Bucket: mem.New()}
	w := besteffort.Wrap(in)
	pl, ok := w.(multipart.PendingLister)
	if !ok {
		t.Fatal("over a multipart.PendingLister, the wrapper is none")
	}
	for _, err := range pl.ListPending(ctx, "") {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, err := range w.List(ctx, "") {
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.PutStream(ctx, "k", strings.NewReader("body"), driver.PutOptions{If: driver.IfAbsent()}, nil); err != nil {
		t.Fatal(err)
	}
	if err := location.Close(w); err != nil {
		t.Fatal(err)
	}
	if in.pending != 1 || in.closed != 1 || in.listed != 1 || in.streamed != 1 {
		t.Errorf("reached the wrapped bucket's ListPending %d, Close %d, List %d, PutStream %d times; want each once",
			in.pending, in.closed, in.listed, in.streamed)
	}
}

// TestWriteTimeHasNoModified: the Attrs of a Put carry the service's
// time, with no modification time (a Put reads no object), though the
// wrapper read the object to check the condition; a refused Put carries
// the time of that read.
func TestWriteTimeHasNoModified(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 4, 21, 0, 0, 0, time.UTC)
	b := besteffort.Wrap(&mem.Bucket{Now: func() time.Time { now = now.Add(time.Second); return now }})
	put, err := b.Put(ctx, "k", []byte("one"), driver.PutOptions{If: driver.IfAbsent()})
	if err != nil || put.Time.Date.IsZero() || !put.Time.Modified.IsZero() {
		t.Fatalf("Put: %+v, %v; want a Date and no modification time", put.Time, err)
	}
	refused, err := b.Put(ctx, "k", []byte("two"), driver.PutOptions{If: driver.IfMatch(objects.FakeVersion(put.Version))})
	if !errors.Is(err, driver.ErrPrecondition) {
		t.Fatalf("a Put of a made-up version: %v", err)
	}
	if !refused.Time.Date.After(put.Time.Date) || !refused.Time.Modified.IsZero() {
		t.Errorf("a refused Put: %+v; want a Date after the Put's %v and no modification time", refused.Time, put.Time.Date)
	}
	_, got, err := objects.ReadAll(ctx, b, "k", 10, driver.GetOptions{})
	if err != nil || got.Time.Modified.IsZero() {
		t.Errorf("Get: %+v, %v; want the object's modification time", got.Time, err)
	}
}
