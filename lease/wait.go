package lease

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// waitFor attempts to take the lease until an attempt takes it or fails
// otherwise than ErrHeld, or ctx ends. After a *HeldError it waits until
// the lease could be taken over (HeldError.TakeoverAt), looking again at
// least every third of a TTL. When ctx ends while it waits, it returns an
// error wrapping ctx's cause and the last *HeldError.
func (c *Contender) waitFor(ctx context.Context) (*Lease, error) {
	for {
		l, err := c.try(ctx)
		var held *HeldError
		if !errors.As(err, &held) || errors.Is(err, ErrInstanceInUse) {
			return l, err
		}
		t := time.NewTimer(heldDelay(held, c.s.ttl))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("acquire %s: stopped waiting: %w: %w", c.key, context.Cause(ctx), err)
		case <-t.C:
		}
	}
}

// heldDelay is how long a waiting Acquire sleeps after held: until the
// lease could be taken over, and a little more, but never longer than a
// third of the TTL, so that it sees a release or a suspect record in time.
func heldDelay(held *HeldError, ttl time.Duration) time.Duration {
	poll := max(ttl/3, 100*time.Millisecond)
	if held.TakeoverAt.IsZero() {
		return poll
	}
	return min(max(held.TakeoverAt.Sub(held.Now)+100*time.Millisecond, 100*time.Millisecond), poll)
}
