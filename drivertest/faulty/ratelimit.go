package faulty

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mushroomdb/bucketlease/clock"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/internal/location"
)

// ErrKeyRateLimited is the service's error inside the driver.ErrRateLimited
// a RateLimit bucket returns.
var ErrKeyRateLimited = errors.New("faulty: 429 Too Many Requests: more than one write to this key within the interval")

// RateLimit allows one write (Put or Delete) to one key per Interval, as
// R2 and Cloud Storage allow about one a second: a sooner write is refused
// before it reaches the inner bucket with an error wrapping
// driver.ErrRateLimited. Reads, List and PutStream are not limited. Time is
// Clock's monotonic reading.
type RateLimit struct {
	driver.Bucket
	Clock      clock.Clock   // nil: clock.System
	Interval   time.Duration // 0: a second
	RetryAfter time.Duration // the Retry-After it gives; 0: none, -1: the time left in the interval
	Declare    bool          // declare Interval as Capabilities().KeyWriteInterval
	// Only, if set, limits the rate limit to the keys it reports true for.
	Only func(key string) bool

	mu      sync.Mutex
	last    map[string]time.Duration
	refused atomic.Int64
}

// Capabilities declares the inner bucket's, with the interval if Declare.
func (r *RateLimit) Capabilities() driver.Capabilities {
	c := r.Bucket.Capabilities()
	if r.Declare {
		c.KeyWriteInterval = r.interval()
	}
	return c
}

// Refused returns how many writes were refused for their rate.
func (r *RateLimit) Refused() int64 { return r.refused.Load() }

func (r *RateLimit) interval() time.Duration {
	if r.Interval > 0 {
		return r.Interval
	}
	return time.Second
}

// refusal returns an Op for a put or a delete of key under cond, to build
// the refusal's error with.
func refusal(op, key string, cond driver.Condition) *driver.Op {
	caps := driver.Capabilities{ConditionalDelete: true}
	if op == "delete" {
		o, _ := driver.BeginDelete(context.Background(), caps, "faulty", key, cond)
		return o
	}
	o, _ := driver.BeginPut(context.Background(), caps, "faulty", key, driver.PutOptions{If: cond})
	return o
}

// admit decides whether a write to key may reach the service now, and
// returns the refusal if not.
func (r *RateLimit) admit(op, key string, cond driver.Condition) error {
	if r.Only != nil && !r.Only(key) {
		return nil
	}
	clk := r.Clock
	if clk == nil {
		clk = clock.System{}
	}
	now := clk.Mono()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		r.last = map[string]time.Duration{}
	}
	if last, ok := r.last[key]; ok && now-last < r.interval() {
		r.refused.Add(1)
		after := r.RetryAfter
		if after < 0 {
			after = r.interval() - (now - last)
		}
		return refusal(op, key, cond).RateLimited(ErrKeyRateLimited, after)
	}
	r.last[key] = now
	return nil
}

// Put refuses a write that comes too soon, and forwards any other.
func (r *RateLimit) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	if err := ctx.Err(); err != nil {
		return driver.Attrs{}, err
	}
	if err := r.admit("put", key, opts.If); err != nil {
		return driver.Attrs{}, err
	}
	return r.Bucket.Put(ctx, key, data, opts)
}

// Close closes the inner bucket (bucket.Bucket.Close).
func (r *RateLimit) Close() error { return location.Close(r.Bucket) }

// Delete refuses a delete that comes too soon, and forwards any other.
func (r *RateLimit) Delete(ctx context.Context, key string, cond driver.Condition) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := r.admit("delete", key, cond); err != nil {
		return err
	}
	return r.Bucket.Delete(ctx, key, cond)
}
