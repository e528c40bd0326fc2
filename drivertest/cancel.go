package drivertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
)

// Obligation 6 at every step of a write: a Put whose context ends partway.

// countdownCtx cancels itself the n-th time anyone looks at it (Done or
// Err), so a write is cancelled at each of its steps in turn, without a timer.
type countdownCtx struct {
	context.Context
	left   atomic.Int64
	cancel context.CancelFunc
}

func newCountdown(parent context.Context, n int64) (*countdownCtx, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	c := &countdownCtx{Context: ctx, cancel: cancel}
	c.left.Store(n)
	return c, cancel
}

func (c *countdownCtx) tick() {
	if c.left.Add(-1) == 0 {
		c.cancel()
	}
}

func (c *countdownCtx) Done() <-chan struct{} { c.tick(); return c.Context.Done() }
func (c *countdownCtx) Err() error            { c.tick(); return c.Context.Err() }

// settleChecks is how often, and how far apart, the object is read after
// a cancelled write returned, to see that nothing of it lands later.
const (
	settleChecks = 5
	settleGap    = 20 * time.Millisecond
)

// putCanceledSettles cancels a large Put at its first, second, ... look at
// its context: each fails matching context.Canceled with the object as it
// was, or stores the whole body, which then changes no more.
func putCanceledSettles(ctx context.Context, s *scope) error {
	k := s.key("obj")
	old := []byte("small")
	v, err := seed(ctx, s.b, k, old)
	if err != nil {
		return err
	}
	pattern := bytes.Repeat([]byte("0123456789abcdef"), largeSize/16)
	for n := int64(1); n <= 8; n++ {
		// Each Put gets its own buffer: a transport may still be reading the
		// last one's after that Put returned.
		big := bytes.Clone(pattern)
		big[0] = byte('A' + n)
		cctx, cancel := newCountdown(ctx, n)
		nv, err := put(cctx, s.b, k, big, driver.IfMatch(v))
		cancel()
		putErr := err
		switch {
		case err == nil:
			if err := unchanged(ctx, s.b, k, big, nv); err != nil {
				return fmt.Errorf("a Put cancelled at its look %d at the context succeeded, but: %w", n, err)
			}
			old, v = bytes.Clone(big), nv
		case errors.Is(err, context.Canceled):
			if err := unchanged(ctx, s.b, k, old, v); err != nil {
				return fmt.Errorf("a Put cancelled at its look %d at the context failed (%s), but: %w", n, outcome(err), err)
			}
		default:
			return fmt.Errorf("a Put cancelled at its look %d at the context: %s, want success or context.Canceled", n, outcome(err))
		}
		for range settleChecks {
			time.Sleep(settleGap)
			if gv, err := versionOf(ctx, s.b, k); err != nil || gv != v {
				return fmt.Errorf("after a Put cancelled at its look %d at the context had returned (%s), "+
					"the object changed (version %q, was %q; Get: %s): a write must not land after it returned",
					n, outcome(putErr), gv, v, outcome(err))
			}
		}
	}
	return nil
}

var cancelChecks = []check{{
	name: "put-canceled-settles",
	expect: "a large Put cancelled at each step in turn fails with context.Canceled leaving the object as it was, " +
		"or succeeds with the whole body; once it has returned, the object does not change",
	run: putCanceledSettles,
}}

// versionOf returns key's version, without reading its body.
func versionOf(ctx context.Context, b driver.Bucket, key string) (driver.Version, error) {
	rc, v, err := get(ctx, b, key)
	if err != nil {
		return "", err
	}
	rc.Close()
	return v, nil
}
