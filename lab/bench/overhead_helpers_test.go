package bench

import (
	"context"
	"errors"
	"io"
	"iter"
	"strings"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/mem"
)

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []time.Duration
		want time.Duration
	}{
		{nil, 0},
		{[]time.Duration{5}, 5},
		{[]time.Duration{9, 1, 5}, 5},
		{[]time.Duration{4, 1, 3, 2}, 2}, // (2+3)/2, integer division
		{[]time.Duration{100, 1, 2, 1000, 3}, 3},
	} {
		in := append([]time.Duration(nil), c.in...)
		if got := Median(c.in); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", in, got, c.want)
		}
		for i := range in {
			if in[i] != c.in[i] {
				t.Fatalf("Median modified its input: %v", c.in)
			}
		}
	}
}

// TestInterleave checks the alternation (driver first in even rounds, raw
// first in odd ones), the medians and the ratio, and that an error stops
// the run.
func TestInterleave(t *testing.T) {
	var order []string
	// A stopwatch that reads what the last call "took": 4 ms for the
	// driver, 2 ms for the raw SDK, so no real time is measured.
	var took time.Duration
	since := func(time.Time) time.Duration { return took }
	p := Pair{Name: "op",
		Driver: func(context.Context) error { order = append(order, "d"); took = 4 * time.Millisecond; return nil },
		Raw:    func(context.Context) error { order = append(order, "r"); took = 2 * time.Millisecond; return nil },
	}
	res, err := interleave(context.Background(), p, 4, since)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(joined(order)); got != "drrddrrd" {
		t.Errorf("call order %s, want drrddrrd", got)
	}
	if res.N != 4 || res.DriverMedian != 4*time.Millisecond || res.RawMedian != 2*time.Millisecond {
		t.Errorf("result %+v", res)
	}
	if r := res.Ratio(); r != 2 {
		t.Errorf("ratio %.2f, want 2", r)
	}
	if res.PairedRatio != 2 {
		t.Errorf("paired ratio %.2f, want 2", res.PairedRatio)
	}
	if (Interleaved{}).Ratio() != 0 {
		t.Error("the ratio of nothing measured is not 0")
	}

	boom := errors.New("boom")
	calls := 0
	p.Raw = func(context.Context) error { calls++; return boom }
	if _, err := Interleave(context.Background(), p, 10); !errors.Is(err, boom) || calls != 1 {
		t.Errorf("err %v after %d raw calls, want boom after 1", err, calls)
	}
}

func joined(ss []string) []byte {
	var b []byte
	for _, s := range ss {
		b = append(b, s...)
	}
	return b
}

// TestDriverPairsMem runs the pairs the overhead benchmark builds on the
// in-memory driver, with the driver on both sides: the CAS chain must
// advance and fresh keys must stay fresh.
func TestDriverPairsMem(t *testing.T) {
	b := mem.New()
	raw := driverPairs(t, &renamed{b}, rawOps{})
	pairs := driverPairs(t, b, rawOps{putIfMatch: raw[0].Driver, putIfAbsent: raw[1].Driver, get: raw[2].Driver})
	checkPairs(t, pairs)
}

// TestTargets runs every target's pairs a few times against its emulator,
// so that the benchmark setup is exercised by scripts/test.
func TestTargets(t *testing.T) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) { checkPairs(t, tg.open(t)) })
	}
}

func checkPairs(t *testing.T, pairs []Pair) {
	t.Helper()
	if len(pairs) != 3 {
		t.Fatalf("%d pairs", len(pairs))
	}
	for _, p := range pairs {
		if _, err := Interleave(t.Context(), p, 3); err != nil {
			t.Errorf("%s: %v", p.Name, err)
		}
	}
}

// renamed is a bucket whose keys are prefixed "other/", so that a second
// driverPairs on the same mem bucket gets its own keys.
type renamed struct{ b driver.Bucket }

func (r *renamed) Get(ctx context.Context, key string, opts driver.GetOptions) (io.ReadCloser, driver.Attrs, error) {
	return r.b.Get(ctx, "other/"+key, opts)
}

func (r *renamed) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	return r.b.Put(ctx, "other/"+key, data, opts)
}

func (r *renamed) PutStream(ctx context.Context, key string, rd io.Reader, opts driver.PutOptions, s *driver.StreamOptions) (driver.Attrs, error) {
	return r.b.PutStream(ctx, "other/"+key, rd, opts, s)
}

// List yields the objects under "other/"+prefix, with their keys as r
// names them.
func (r *renamed) List(ctx context.Context, prefix string) iter.Seq2[driver.Object, error] {
	return func(yield func(driver.Object, error) bool) {
		for o, err := range r.b.List(ctx, "other/"+prefix) {
			o.Key = strings.TrimPrefix(o.Key, "other/")
			if !yield(o, err) {
				return
			}
		}
	}
}

func (r *renamed) Delete(ctx context.Context, key string, c driver.Condition) error {
	return r.b.Delete(ctx, "other/"+key, c)
}

func (r *renamed) Capabilities() driver.Capabilities { return r.b.Capabilities() }
