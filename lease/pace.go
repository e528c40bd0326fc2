package lease

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mushroomdb/bucketlease/clock"
	"github.com/mushroomdb/bucketlease/driver"
)

// defaultRetryAfter is the wait before resending a rate-limited write when
// neither the service nor the driver names one.
const defaultRetryAfter = time.Second

// pacer spaces one Acquire's and then its Lease's writes to a key and resends
// those the service refused for its rate (never applied, never taken for a
// condition's refusal): R2 and GCS allow about one write per second per
// object. With a KeyWriteInterval, each write starts that long after the
// previous one's answer (so the service sees them that far apart however
// long they travelled); a rate-limited one is resent after the service's
// wait, the interval, or a second.
type pacer struct {
	clk   clock.Clock
	every time.Duration // the driver's KeyWriteInterval

	mu      sync.Mutex
	turns   map[string]chan struct{} // one write to the key at a time, when spaced
	next    map[string]time.Duration // no write to the key starts before this (monotonic)
	learned time.Duration            // spacing learned from rate-limited answers
}

func newPacer(clk clock.Clock, caps driver.Capabilities) *pacer {
	return &pacer{clk: clk, every: max(caps.KeyWriteInterval, 0), turns: map[string]chan struct{}{}, next: map[string]time.Duration{}}
}

// gap is the spacing between writes to one key, and the key's turn.
func (p *pacer) gap(key string) (time.Duration, chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.turns[key]
	if !ok {
		t = make(chan struct{}, 1)
		p.turns[key] = t
	}
	return max(p.every, p.learned), t
}

// wait returns how long until a write to key may start.
func (p *pacer) wait(key string) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	next, ok := p.next[key]
	if !ok {
		return 0
	}
	return max(next-p.clk.Mono(), 0)
}

// answered notes an answer to key now; the next write may start d later.
func (p *pacer) answered(key string, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	next := p.clk.Mono() + d
	if prev, ok := p.next[key]; ok {
		next = max(prev, next)
	}
	p.next[key] = next
}

// limited notes a rate-limited write to key and returns the wait before
// resending it.
func (p *pacer) limited(key string, err error) time.Duration {
	wait, ok := driver.RetryAfter(err)
	if !ok {
		wait = p.every
	}
	if wait <= 0 {
		wait = defaultRetryAfter
	}
	p.mu.Lock()
	p.learned = max(p.learned, min(wait, defaultRetryAfter))
	p.mu.Unlock()
	p.answered(key, wait)
	return wait
}

// do runs write in key's turn, again after each rate-limited answer, until
// answered otherwise, ctx ends, or the next try could not start before until
// (monotonic; 0 for none). A nil pacer runs it once.
func (p *pacer) do(ctx context.Context, key string, until time.Duration, write func(context.Context) error) error {
	if p == nil {
		return write(ctx)
	}
	for {
		gap, turn := p.gap(key)
		if gap > 0 {
			select {
			case turn <- struct{}{}:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		err := p.attempt(ctx, key, gap, until, write)
		if gap > 0 {
			<-turn
		}
		if !errors.Is(err, driver.ErrRateLimited) {
			return err
		}
		if wait := p.limited(key, err); until != 0 && p.clk.Mono()+wait > until {
			return fmt.Errorf("%w; not sent again: the service's wait would end after the deadline", err)
		}
	}
}

// attempt waits for key's next start, sends write and notes its answer.
func (p *pacer) attempt(ctx context.Context, key string, gap, until time.Duration, write func(context.Context) error) error {
	wait := p.wait(key)
	if until != 0 && p.clk.Mono()+wait > until {
		return fmt.Errorf("the write to %s could not be sent in its turn before the deadline (the service allows one write to a key every %v)", key, gap)
	}
	if err := clock.Sleep(ctx, p.clk, wait); err != nil {
		return err
	}
	err := write(ctx)
	p.answered(key, gap)
	return err
}

// put is do for a Put, with the service's time of the last answer stating
// one.
func (p *pacer) put(ctx context.Context, b driver.Bucket, key string, data []byte, cond driver.Condition, until time.Duration) (driver.Attrs, error) {
	var a driver.Attrs
	var t driver.ServiceTime
	err := p.do(ctx, key, until, func(ctx context.Context) (err error) {
		a, err = b.Put(ctx, key, data, driver.PutOptions{If: cond})
		if !a.Time.Date.IsZero() {
			t = a.Time
		}
		return err
	})
	a.Time = t
	return a, err
}

func (p *pacer) del(ctx context.Context, b driver.Bucket, key string, cond driver.Condition, until time.Duration) error {
	return p.do(ctx, key, until, func(ctx context.Context) error { return b.Delete(ctx, key, cond) })
}

// pacedWrites is how many KeyWriteInterval turns an acquire needs within two
// thirds of its TTL: the write, its probes and a retry.
const pacedWrites = 6

// checkPacedTTL refuses, before anything is written, a TTL too short for an
// acquire's paced writes to end before the fence.
func checkPacedTTL(caps driver.Capabilities, ttl time.Duration, key string) error {
	iv := caps.KeyWriteInterval
	if iv <= 0 || pacedWrites*iv <= ttl*2/3 {
		return nil
	}
	least := (pacedWrites * iv * 3 / 2).Round(time.Second)
	if least < pacedWrites*iv*3/2 {
		least += time.Second
	}
	return fmt.Errorf("lease %s: a TTL of %v is too short for this service, which allows one write to a key every %v: an acquire's writes to the lease object take turns that far apart and must end within two thirds of the TTL; use a TTL of at least %v",
		key, ttl, iv, least)
}
