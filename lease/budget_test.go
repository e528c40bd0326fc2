package lease_test

import (
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/clock"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/lease"
)

// rounds counts requests and sequential round trips. Every request waits
// at a gate that opens batchWindow after the first request of a batch
// arrives; requests sent together (the lease's concurrent probes) arrive
// within microseconds and share a batch, a request that depends on an
// earlier answer cannot arrive before that batch opened, so it starts a new
// one. The window only sorts requests into batches; no duration is asserted.
type rounds struct {
	driver.Bucket
	mu       sync.Mutex
	gate     chan struct{}
	batches  int
	requests int
}

const batchWindow = 250 * time.Millisecond

func (r *rounds) wait() {
	r.mu.Lock()
	r.requests++
	if r.gate == nil {
		r.batches++
		gate := make(chan struct{})
		r.gate = gate
		time.AfterFunc(batchWindow, func() {
			r.mu.Lock()
			r.gate = nil
			r.mu.Unlock()
			close(gate)
		})
	}
	gate := r.gate
	r.mu.Unlock()
	<-gate
}

func (r *rounds) counts() (requests, batches int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests, r.batches
}

func (r *rounds) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests, r.batches = 0, 0
}

func (r *rounds) Get(ctx context.Context, key string, opts driver.GetOptions) (io.ReadCloser, driver.Attrs, error) {
	r.wait()
	return r.Bucket.Get(ctx, key, opts)
}

func (r *rounds) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	r.wait()
	return r.Bucket.Put(ctx, key, data, opts)
}

func (r *rounds) Delete(ctx context.Context, key string, cond driver.Condition) error {
	r.wait()
	return r.Bucket.Delete(ctx, key, cond)
}

// TestRequestBudgets pins what each lease operation costs; README.md has the
// same table. A renewal is one request; a refusal by a fresh holder is one
// read; an acquire that writes is five sequential round trips: the read,
// the scratch key that proves the path, its two probes together, the write
// to the lease object, then the probes of the lease object beside the
// scratch key's delete.
func TestRequestBudgets(t *testing.T) {
	ctx := context.Background()
	type budget struct{ requests, rounds int }
	check := func(t *testing.T, name string, r *rounds, want budget) {
		t.Helper()
		req, rt := r.counts()
		if req != want.requests || rt != want.rounds {
			t.Errorf("%s: %d requests in %d sequential round trips, budget %d in %d", name, req, rt, want.requests, want.rounds)
		}
		r.reset()
	}

	t.Run("acquire on an empty prefix, renew, release", func(t *testing.T) {
		r := &rounds{Bucket: machineClocksOnly()}
		c := clock.NewFake(t0)
		l, err := lease.Acquire(ctx, bucket.New(r, "db1"), opts("me", c, nil))
		if err != nil {
			t.Fatal(err)
		}
		check(t, "acquire on an empty prefix", r, budget{9, 5}) // read; scratch key; its two probes; If-None-Match: *; both probes beside If-Match on the new version and the scratch delete
		c.Advance(ttl / 3)
		if err := l.Renew(ctx); err != nil {
			t.Fatal(err)
		}
		check(t, "renewal", r, budget{1, 1})
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		check(t, "release", r, budget{1, 1})
	})
	t.Run("take back our own lease after a restart", func(t *testing.T) {
		b := machineClocksOnly()
		c := clock.NewFake(t0)
		acquire(t, b, "me", c)
		c.Advance(time.Second) // the restart
		r := &rounds{Bucket: b}
		restarted, err := lease.NewContender(bucket.New(r, "db1"), opts("me", c, nil))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := restarted.Acquire(ctx); !errors.Is(err, lease.ErrHeld) {
			t.Fatalf("first attempt after the restart: %v, want ErrHeld until the old record is stale", err)
		}
		check(t, "first look after a restart", r, budget{1, 1})
		c.Advance(ttl - time.Second) // stale
		if _, err := restarted.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		check(t, "take back", r, budget{8, 5}) // read; scratch key; its two probes; If-Match beside the made-up-version probe; If-None-Match probe beside the scratch delete
	})
	t.Run("take over a stale lease", func(t *testing.T) {
		b := machineClocksOnly()
		c := clock.NewFake(t0)
		put(t, b, foreign("dead", t0.Add(-time.Hour), 30))
		r := &rounds{Bucket: b}
		if _, err := lease.Acquire(ctx, bucket.New(r, "db1"), opts("me", c, nil)); err != nil {
			t.Fatal(err)
		}
		check(t, "takeover", r, budget{8, 5})
	})
	t.Run("refused by a fresh holder", func(t *testing.T) {
		b := machineClocksOnly()
		c := clock.NewFake(t0)
		acquire(t, b, "holder", c)
		r := &rounds{Bucket: b}
		if _, err := lease.Acquire(ctx, bucket.New(r, "db1"), opts("me", c, nil)); err == nil {
			t.Fatal("acquired a held lease")
		}
		check(t, "refusal", r, budget{1, 1}) // read first: nothing is written over a fresh record
	})
	t.Run("negative control: serial requests count as separate rounds", func(t *testing.T) {
		r := &rounds{Bucket: machineClocksOnly()}
		for range 3 {
			r.Put(ctx, "k", nil, driver.PutOptions{})
		}
		if _, rt := r.counts(); rt != 3 {
			t.Fatalf("three serial requests counted as %d rounds", rt)
		}
	})
}
