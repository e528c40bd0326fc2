package drivertest_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"iter"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/mem"
	"github.com/mushroomdb/bucketlease/driver/multipart"
	"github.com/mushroomdb/bucketlease/drivertest"
	"github.com/mushroomdb/bucketlease/internal/objects"
)

// The negative controls of the streaming, listing and cancellation checks:
// for each check, a bucket broken the way a real
// driver could be, which the check must catch. The correct mem and file
// drivers pass them all (TestMem, TestFile).

// brokenStream is the mem driver with its streamed writes broken in the
// ways its fields say, and a multipart.PendingLister of the uploads it left
// (streamOnly hides that). One type serves every negative control of a
// streamed write, so that each says only how its driver is broken.
type brokenStream struct {
	*mem.Bucket
	ignoreCond    bool // commits every streamed write unconditionally
	truncate      bool // stores only the first part of the body
	wrongVersion  bool // returns a version that is not the stored one
	ignoreCancel  bool // reads the whole body and commits whatever becomes of the context
	ignoreGate    bool // never calls MayStart
	noAbort       bool // leaves a failed write's upload pending instead of aborting it
	declareLeft   bool // with noAbort, its error says so: staged, not aborted (as for an Azure block)
	stageAsObject bool // stages under key + ".part", a key of the bucket, and leaves it there on failure

	mu      sync.Mutex
	pending []multipart.Pending
}

func (b *brokenStream) PutStream(ctx context.Context, key string, r io.Reader, po driver.PutOptions, o *driver.StreamOptions) (driver.Attrs, error) {
	if b.ignoreCond {
		po.If = driver.Condition{}
	}
	if b.truncate {
		r = io.LimitReader(r, o.Size())
	}
	if b.ignoreCancel {
		ctx = context.WithoutCancel(ctx)
	}
	if b.ignoreGate {
		o = &driver.StreamOptions{PartSize: o.Size(), Concurrency: o.Parallel()}
	}
	a, err := b.Bucket.PutStream(ctx, key, r, po, o)
	if b.wrongVersion {
		a.Version = objects.FakeVersion(a.Version)
	}
	if err != nil && b.noAbort {
		b.mu.Lock()
		b.pending = append(b.pending, multipart.Pending{Key: key, Upload: "u-" + strconv.Itoa(len(b.pending))})
		b.mu.Unlock()
		var ue *multipart.UploadError
		if b.declareLeft && errors.As(err, &ue) {
			ue.Aborted = false
		}
	}
	if err != nil && b.stageAsObject {
		b.Bucket.Put(context.WithoutCancel(ctx), key+".part", []byte("staged"), driver.PutOptions{})
	}
	return a, err
}

func (b *brokenStream) ListPending(ctx context.Context, prefix string) iter.Seq2[multipart.Pending, error] {
	return func(yield func(multipart.Pending, error) bool) {
		b.mu.Lock()
		ps := slices.Clone(b.pending)
		b.mu.Unlock()
		for _, p := range ps {
			if strings.HasPrefix(p.Key, prefix) && !yield(p, nil) {
				return
			}
		}
	}
}

// streamOnly is a driver with no ListPending: one whose uploads the suite
// cannot list unless the author passes Options.Pending.
type streamOnly struct{ driver.Bucket }

// bucketOnly is a driver with Bucket's methods only: no pending uploads,
// no Close.
type bucketOnly struct{ driver.Bucket }

func TestStreamConditionIgnored(t *testing.T) {
	failed, rep := failedChecks(t, streamOnly{&brokenStream{Bucket: mem.New(), ignoreCond: true}}, drivertest.Options{}, "stream-if-absent-existing", "stream-if-match-stale", "stream-race-if-absent")
	mustCatch(t, failed, "stream-if-absent-existing", "PutStream (If-None-Match: *) of a body of three parts: success")
	mustCatch(t, failed, "stream-if-match-stale", "success")
	mustCatch(t, failed, "stream-race-if-absent", "exactly one should")
	if rep.Observed.Exclusion != driver.NoExclusion {
		t.Errorf("observed exclusion %v for a driver whose streamed writes ignore their condition", rep.Observed.Exclusion)
	}
}

func TestStreamTruncated(t *testing.T) {
	failed, _ := failedChecks(t, streamOnly{&brokenStream{Bucket: mem.New(), truncate: true}}, drivertest.Options{}, "stream-round-trip", "stream-race-if-absent")
	mustCatch(t, failed, "stream-round-trip", "bytes long")
	mustCatch(t, failed, "stream-race-if-absent", "whole body")
}

func TestStreamWrongVersion(t *testing.T) {
	failed, _ := failedChecks(t, streamOnly{&brokenStream{Bucket: mem.New(), wrongVersion: true}}, drivertest.Options{}, "stream-round-trip")
	mustCatch(t, failed, "stream-round-trip", "but Get returns")
}

func TestStreamCancelIgnored(t *testing.T) {
	failed, _ := failedChecks(t, streamOnly{&brokenStream{Bucket: mem.New(), ignoreCancel: true}}, drivertest.Options{}, "stream-canceled-mid-body")
	mustCatch(t, failed, "stream-canceled-mid-body", "not context.Canceled")
}

func TestStreamGateIgnored(t *testing.T) {
	failed, _ := failedChecks(t, streamOnly{&brokenStream{Bucket: mem.New(), ignoreGate: true}}, drivertest.Options{}, "stream-may-start-refused", "stream-round-trip")
	mustCatch(t, failed, "stream-may-start-refused", "want an error wrapping MayStart's")
	mustCatch(t, failed, "stream-round-trip", "MayStart was called 0 times")
}

// abortChecks are the checks of a failed streamed write that look for
// what it left pending.
var abortChecks = []string{"stream-canceled-mid-body", "stream-may-start-refused", "stream-if-absent-existing", "stream-if-match-stale"}

func TestStreamNotAborted(t *testing.T) {
	failed, _ := failedChecks(t, &brokenStream{Bucket: mem.New(), noAbort: true}, drivertest.Options{}, abortChecks...)
	for _, check := range abortChecks {
		mustCatch(t, failed, check, "left a pending upload")
	}
}

// lateWrite reports a Put whose context has ended as cancelled, and then
// makes the write anyway, a little later, as a driver does whose request
// had left before it gave up: just before it serves the second Get of that
// key after the Put returned. Counted in reads, not timed, so that the
// write lands after the check's first look (which finds the object as it
// was) on a machine of any speed.
type lateWrite struct {
	*mem.Bucket
	mu      sync.Mutex
	pending map[string]*pendingWrite
}

type pendingWrite struct {
	data  []byte
	cond  driver.Condition
	reads int
}

func (b *lateWrite) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	if err := ctx.Err(); err != nil {
		b.mu.Lock()
		if b.pending == nil {
			b.pending = map[string]*pendingWrite{}
		}
		b.pending[key] = &pendingWrite{data: bytes.Clone(data), cond: opts.If}
		b.mu.Unlock()
		return driver.Attrs{}, err
	}
	return b.Bucket.Put(ctx, key, data, opts)
}

func (b *lateWrite) Get(ctx context.Context, key string, opts driver.GetOptions) (io.ReadCloser, driver.Attrs, error) {
	b.mu.Lock()
	if w := b.pending[key]; w != nil {
		if w.reads++; w.reads == 2 {
			delete(b.pending, key)
			b.Bucket.Put(context.Background(), key, w.data, driver.PutOptions{If: w.cond})
		}
	}
	b.mu.Unlock()
	return b.Bucket.Get(ctx, key, opts)
}

func TestPutLandsAfterCancel(t *testing.T) {
	b := &lateWrite{Bucket: mem.New()}
	failed, _ := failedChecks(t, b, drivertest.Options{}, "put-canceled-settles")
	mustCatch(t, failed, "put-canceled-settles", "a write must not land after it returned")
}

// listBroken is mem with its List broken in one way.
type listBroken struct {
	*mem.Bucket
	mangle func(prefix string, objs []driver.Object) []driver.Object
}

func (b listBroken) List(ctx context.Context, prefix string) iter.Seq2[driver.Object, error] {
	return func(yield func(driver.Object, error) bool) {
		var objs []driver.Object
		for o, err := range b.Bucket.List(ctx, prefix) {
			if err != nil {
				yield(o, err)
				return
			}
			objs = append(objs, o)
		}
		for _, o := range b.mangle(prefix, objs) {
			if !yield(o, nil) {
				return
			}
		}
	}
}

func TestListNegativeControls(t *testing.T) {
	var staleMu sync.Mutex
	stale := map[string][]driver.Object{}
	cases := []struct {
		name, check, want string
		mangle            func(prefix string, objs []driver.Object) []driver.Object
	}{
		{"first page only", "list-paged", "missing", func(_ string, o []driver.Object) []driver.Object { return o[:min(len(o), 1000)] }},
		{"out of order", "list-paged", "out of lexical order", func(_ string, o []driver.Object) []driver.Object {
			slices.Reverse(o)
			return o
		}},
		{"a page twice", "list-paged", "out of lexical order", func(_ string, o []driver.Object) []driver.Object {
			return append(o, o[:min(len(o), 3)]...)
		}},
		{"prefix as a directory", "list-prefix-of-key", "missing", func(p string, o []driver.Object) []driver.Object {
			return slices.DeleteFunc(o, func(x driver.Object) bool {
				rest := strings.TrimPrefix(x.Key, p)
				return !strings.HasSuffix(p, "/") && rest != "" && !strings.HasPrefix(rest, "/")
			})
		}},
		{"keys URL-encoded", "list-odd-keys", "unexpected", func(_ string, o []driver.Object) []driver.Object {
			for i := range o {
				o[i].Key = strings.ReplaceAll(url.QueryEscape(o[i].Key), "%2F", "/")
			}
			slices.SortFunc(o, func(a, b driver.Object) int { return strings.Compare(a.Key, b.Key) })
			return o
		}},
		{"versions in another form", "list-read-your-write", "Put returned", func(_ string, o []driver.Object) []driver.Object {
			for i := range o {
				o[i].Version = `"` + o[i].Version + `"`
			}
			return o
		}},
		{"sizes wrong", "list-read-your-write", "has size", func(_ string, o []driver.Object) []driver.Object {
			for i := range o {
				o[i].Size++
			}
			return o
		}},
		{"a stale listing", "list-read-your-write", "just after an overwrite", func(p string, o []driver.Object) []driver.Object {
			staleMu.Lock()
			defer staleMu.Unlock()
			if old, ok := stale[p]; ok {
				return old
			}
			stale[p] = o
			return o
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			failed, _ := failedChecks(t, listBroken{Bucket: mem.New(), mangle: c.mangle}, drivertest.Options{}, c.check)
			mustCatch(t, failed, c.check, c.want)
		})
	}
}

// wholeOnly is mem with the PutStream of a driver that cannot stage parts
// (driver.PutWhole): it takes a body of part size × concurrency at most.
type wholeOnly struct{ *mem.Bucket }

func (b wholeOnly) PutStream(ctx context.Context, key string, r io.Reader, opts driver.PutOptions, s *driver.StreamOptions) (driver.Attrs, error) {
	return driver.PutWhole(ctx, b, key, r, opts, s)
}

// TestWholeStreamNotFailed: a driver whose PutStream is driver.PutWhole
// has the streamed writes it cannot take (longer than part size ×
// concurrency) reported as skipped, saying so, not as failures;
// stream-reader-fails, whose bodies it takes, runs and passes.
func TestWholeStreamNotFailed(t *testing.T) {
	rep := drivertest.Check(context.Background(), wholeOnly{mem.New()}, drivertest.Options{})
	skipped := 0
	for _, r := range rep.Results {
		if r.Name == "stream-reader-fails" {
			if r.Skipped || r.Status() != "PASS" {
				t.Errorf("%s on a driver that cannot stage parts (driver.PutWhole): %s (%s), want PASS", r.Name, r.Status(), r.Got)
			}
			continue
		}
		if strings.HasPrefix(r.Name, "stream-") && r.Skipped && strings.Contains(r.Got, "cannot stream this body") {
			skipped++
		}
	}
	if skipped == 0 {
		t.Error("no streamed write was reported as one the driver cannot take")
	}
	if !rep.OK() {
		t.Errorf("a conforming driver that cannot stage parts is not OK: %v", failuresOf(rep))
	}
}
