package lease

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// A shield lets an acquire interrupted after its first write of the lease
// object run to its end, for up to cleanupTimeout more, so that it can
// release what it wrote instead of leaving a fresh record that locks others
// out for a TTL. Before that write, cancellation ends the acquire at once.
type shield struct {
	mu          sync.Mutex
	wrote       bool // the attempt has started a write of the lease object
	interrupted bool // the caller's context has ended
	stopTimer   func() bool
}

// on returns the attempt's context, and a function to call when it is over.
func (s *shield) on(ctx context.Context) (context.Context, func()) {
	sctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.interrupted = true
		if !s.wrote {
			cancel(context.Cause(ctx))
			return
		}
		t := time.AfterFunc(cleanupTimeout, func() { cancel(context.Cause(ctx)) })
		s.stopTimer = t.Stop
	})
	return sctx, func() {
		stop()
		s.mu.Lock()
		if s.stopTimer != nil {
			s.stopTimer()
		}
		s.mu.Unlock()
		cancel(context.Canceled)
	}
}

// write, before each write of the lease object, refuses the first one once
// the caller's context has ended.
func (s *shield) write() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.interrupted && !s.wrote {
		return errShielded
	}
	s.wrote = true
	return nil
}

// errShielded: write refused a first write; Acquire reports ctx's error.
var errShielded = errors.New("the acquire was interrupted before its first write")

// interrupted is Acquire's result when the caller's context ended during an
// attempt that returned l and err: a lease made is released, a record of
// ours left by a cut-off attempt is abandoned, and a record cleanUp left to
// block the prefix stays, as its error says.
func (a *attempt) interrupted(ctx context.Context, l *Lease, err error) (*Lease, error) {
	cause := fmt.Errorf("acquire %s: %w", a.c.key, context.Cause(ctx))
	if l != nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if rerr := l.Release(rctx); rerr != nil {
			return nil, fmt.Errorf("%w; the lease had been taken (version %s), and releasing it failed, so it stays fresh until %s: %w",
				cause, l.lastVersion(), l.lastRecord().RenewedAt.Add(l.lastRecord().TTL()).Format(time.RFC3339), rerr)
		}
		return nil, fmt.Errorf("%w; the lease had been taken (version %s), and is now released", cause, l.lastVersion())
	}
	switch {
	case err == nil || errors.Is(err, errShielded):
		return nil, fmt.Errorf("%w; nothing was written", cause)
	case !a.wrote:
		return nil, fmt.Errorf("%w; nothing was written (%w)", cause, err)
	case a.cleaned:
		return nil, fmt.Errorf("%w; %w", cause, err)
	}
	return nil, a.abandon(ctx, fmt.Errorf("%w (%w)", cause, err))
}

// abandon marks a cut-off attempt's record released, as Release does, within
// cleanupTimeout, and returns cause with what it left.
func (a *attempt) abandon(ctx context.Context, cause error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	key := a.c.key
	cur, v, err := a.read(ctx)
	switch {
	case errors.Is(err, driver.ErrNotExist):
		return fmt.Errorf("%w; no lease of this acquire is left at %s", cause, key)
	case err == nil && (cur.Err != nil || !a.c.owns(cur.Record)):
		return fmt.Errorf("%w; the lease object holds no record of this acquire, so no lease of it is left", cause)
	case err == nil && cur.Record.TTLSeconds == 0:
		return fmt.Errorf("%w; the lease object holds a released record of this acquire, so no lease of it is left", cause)
	case err == nil:
		var left string
		if left, err = release(ctx, a.b, a.pace, key, v, cur.Record, &a.c.sent, a.c.stamps, a.c.s.clock.Wall()); err == nil {
			if left != "" {
				return fmt.Errorf("%w; %s, so no lease of this acquire is left", cause, left)
			}
			return fmt.Errorf("%w; the lease object had been written, and is now marked released", cause)
		}
	}
	return fmt.Errorf("%w; the lease object may hold a record of instance %s, fresh for up to %s, since marking it released failed: %w",
		cause, a.c.s.id, a.c.s.ttl, err)
}

// cleanupTimeout bounds a clean-up, which runs on a context of its own.
const cleanupTimeout = 10 * time.Second

// cleanUp leaves the prefix safe after an acquire that wrote and then found
// a precondition not applied, returning failure with what it left. Its first
// write may have gone over a live holder, who may write until its fence, so
// our record is not released but restamped to block the prefix for a full
// TTL (checkBlocked keeps us out too). Anyone else's record is left alone.
func (a *attempt) cleanUp(ctx context.Context, st stamp, failure error) error {
	a.cleaned = true
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	cur, v, err := a.read(ctx)
	switch {
	case errors.Is(err, driver.ErrNotExist):
		return failure
	case err == nil && (cur.Err != nil || !a.c.owns(cur.Record)):
		return failure // not ours: nothing of ours is left
	case err == nil:
		block := cur.Record
		block.RenewedAt = a.c.stamps.renewed(a.c.s.clock.Wall())
		block.TTLSeconds = int64(a.blockTTL(st) / time.Second)
		// Not remembered as sent: it is no lease of ours to take back.
		a.c.blocked = block
		if _, err = a.pace.put(ctx, a.b, a.c.key, block.Encode(), driver.IfMatch(v), 0); err == nil {
			return fmt.Errorf("%w; %s, so the lease object was left blocked: it holds a record of instance %s, fresh until %s (ttl %ds), "+
				"so that nobody takes the prefix before a holder it may have overwritten has fenced itself. Fix the path to the service; after %s, acquire again (or break the lease, once you know that nobody else writes to the prefix)",
				failure, a.overwrote(st), block.InstanceID, block.RenewedAt.Add(block.TTL()).Format(time.RFC3339), block.TTLSeconds,
				block.RenewedAt.Add(block.TTL()).Format(time.RFC3339))
		}
	}
	left := st.rec.RenewedAt.Add(st.rec.TTL())
	return fmt.Errorf("%w; %s, and the clean-up failed, so a lease record naming instance %s may be left at %s, "+
		"fresh until %s: %w", failure, a.overwrote(st), a.c.s.id, a.c.key, left.Format(time.RFC3339), err)
}

// blockTTL is how long cleanUp blocks the prefix.
func (a *attempt) blockTTL(st stamp) time.Duration {
	d := a.c.s.ttl
	if st.seen != nil && st.seen.TTL() > d {
		d = min(st.seen.TTL(), admin.MaxSaneTTL)
	}
	return d
}

// overwrote says what the attempt's first write may have gone over.
func (a *attempt) overwrote(st stamp) string {
	r := st.seen
	switch {
	case r == nil:
		return "this acquire's first write may have gone over a lease another instance created in the same instant (the key was free when read)"
	case r.TTLSeconds == 0:
		return fmt.Sprintf("this acquire's first write went over the released lease of instance %s, or over a newer record written in the same instant", r.InstanceID)
	default:
		return fmt.Sprintf("this acquire's first write went over the lease of instance %s (renewed %s, ttl %ds), or over a newer record written in the same instant",
			r.InstanceID, r.RenewedAt.Format(time.RFC3339), r.TTLSeconds)
	}
}

// checkBlocked refuses an acquire while cleanUp's record blocks the prefix.
func (c *Contender) checkBlocked() error {
	if c.blocked.InstanceID == "" {
		return nil
	}
	until := c.blocked.RenewedAt.Add(c.blocked.TTL())
	if !c.s.clock.Wall().Before(until) {
		c.blocked = admin.Record{}
		return nil
	}
	return fmt.Errorf("acquire %s: %w: an earlier acquire of this contender failed on a path that did not apply a precondition, and left the prefix blocked until %s; nothing was sent",
		c.key, ErrPreconditionsIgnored, until.Format(time.RFC3339))
}
