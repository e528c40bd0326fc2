// Package wrapcheck tests that a Bucket wrapper keeps the optional
// abilities of the bucket it wraps (driver.Streamer, driver.Lister,
// driver.PendingLister, io.Closer): each package that defines a wrapper
// calls Check from a test, and this package's own test enumerates the
// wrappers of the module and fails for one that no Check covers.
package wrapcheck

import (
	"context"
	"io"
	"iter"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/mem"
)

// Option adjusts what Check expects of a wrapper.
type Option func(*config)

type config struct{ closeStays string }

// CloseStaysOpen says that the wrapper's Close leaves the inner bucket open,
// and why (Lease.Bucket's: the bucket is the one the lease was given, which
// the lease still uses). Its type must still be an io.Closer where the
// inner's is.
func CloseStaysOpen(why string) Option { return func(c *config) { c.closeStays = why } }

// Check wraps, with wrap, inner buckets with each optional ability alone,
// with none and with all, and fails unless the wrapper implements exactly
// the abilities its inner bucket does (and io.Closer, as driver.Wrap's
// results all do), and each of its optional methods reaches the inner
// bucket. name is the wrapper's type, as the module's
// enumeration (TestEveryWrapperIsChecked) looks for it. wrap gets a bucket
// holding nothing, on which a lease can be taken.
func Check(t *testing.T, name string, wrap func(t *testing.T, inner driver.Bucket) driver.Bucket, opts ...Option) {
	t.Helper()
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	for _, tc := range inners() {
		t.Run(name+"/"+tc.name, func(t *testing.T) {
			w := wrap(t, tc.b)
			has := driver.Optional(tc.b)
			want := has
			if !slices.Contains(want, "io.Closer") {
				want = append(slices.Clone(want), "io.Closer") // driver.Wrap's Close closes what there is
			}
			if got := driver.Optional(w); !slices.Equal(got, want) {
				t.Fatalf("%s over a bucket with %v implements %v, want %v: it hides or invents an optional ability (build it with driver.Wrap)",
					name, has, got, want)
			}
			for _, ability := range has {
				if ability == "io.Closer" && cfg.closeStays != "" {
					continue
				}
				before := tc.p.calls(ability)
				use(t, w, ability)
				if tc.p.calls(ability) == before {
					t.Errorf("%s's %s did not reach the inner bucket's", name, ability)
				}
			}
		})
	}
}

// use calls w's method of ability once.
func use(t *testing.T, w driver.Bucket, ability string) {
	ctx := context.Background()
	var err error
	switch ability {
	case "Streamer":
		_, err = w.(driver.Streamer).PutStream(ctx, "wrapcheck-stream", strings.NewReader("body"), driver.Condition{}, nil)
	case "Lister":
		for _, e := range w.(driver.Lister).List(ctx, "") {
			err = e
		}
	case "PendingLister":
		for _, e := range w.(driver.PendingLister).ListPending(ctx, "") {
			err = e
		}
	case "io.Closer":
		err = w.(io.Closer).Close()
	default:
		t.Fatalf("wrapcheck does not know the ability %s: teach it", ability)
	}
	if err != nil {
		t.Errorf("%s through the wrapper: %v", ability, err)
	}
}

type inner struct {
	name string
	b    driver.Bucket
	p    *plain
}

// inners are the buckets Check wraps: one with none of the optional
// abilities, one with each alone, one with all. A new optional interface
// of driver makes Check fail (driver.Optional names it, use does not
// know it) until it is added here.
func inners() []inner {
	type (
		b  = driver.Bucket
		s  = driver.Streamer
		l  = driver.Lister
		pl = driver.PendingLister
		c  = io.Closer
	)
	build := []struct {
		name string
		make func(p *plain) driver.Bucket
	}{
		{"none", func(p *plain) driver.Bucket { return p }},
		{"Streamer", func(p *plain) driver.Bucket {
			return struct {
				b
				s
			}{p, streamer{p}}
		}},
		{"Lister", func(p *plain) driver.Bucket {
			return struct {
				b
				l
			}{p, lister{p}}
		}},
		{"PendingLister", func(p *plain) driver.Bucket {
			return struct {
				b
				pl
			}{p, pendingLister{p}}
		}},
		{"io.Closer", func(p *plain) driver.Bucket {
			return struct {
				b
				c
			}{p, closer{p}}
		}},
		{"all", func(p *plain) driver.Bucket {
			return struct {
				b
				s
				l
				pl
				c
			}{p, streamer{p}, lister{p}, pendingLister{p}, closer{p}}
		}},
	}
	out := make([]inner, 0, len(build))
	for _, x := range build {
		p := &plain{m: mem.New(), n: map[string]int{}}
		out = append(out, inner{x.name, x.make(p), p})
	}
	return out
}

// plain is a memory bucket with the four methods of driver.Bucket only,
// counting the calls of the optional methods its companions make.
type plain struct {
	m  *mem.Bucket
	mu sync.Mutex
	n  map[string]int
}

func (p *plain) hit(ability string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n[ability]++
}

func (p *plain) calls(ability string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n[ability]
}

func (p *plain) Get(ctx context.Context, key string) (io.ReadCloser, driver.Version, error) {
	return p.m.Get(ctx, key)
}

func (p *plain) Put(ctx context.Context, key string, data []byte, cond driver.Condition) (driver.Version, error) {
	return p.m.Put(ctx, key, data, cond)
}

func (p *plain) Delete(ctx context.Context, key string, cond driver.Condition) error {
	return p.m.Delete(ctx, key, cond)
}

func (p *plain) Capabilities() driver.Capabilities { return p.m.Capabilities() }

type streamer struct{ p *plain }

func (s streamer) PutStream(ctx context.Context, key string, r io.Reader, cond driver.Condition, opts *driver.StreamOptions) (driver.Version, error) {
	s.p.hit("Streamer")
	return s.p.m.PutStream(ctx, key, r, cond, opts)
}

type lister struct{ p *plain }

func (l lister) List(ctx context.Context, prefix string) iter.Seq2[driver.Object, error] {
	l.p.hit("Lister")
	return l.p.m.List(ctx, prefix)
}

type pendingLister struct{ p *plain }

func (l pendingLister) ListPending(context.Context, string) iter.Seq2[driver.Pending, error] {
	l.p.hit("PendingLister")
	return func(func(driver.Pending, error) bool) {}
}

type closer struct{ p *plain }

func (c closer) Close() error {
	c.p.hit("io.Closer")
	return nil
}
