package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mushroomdb/bucketlease/lease/admin"
)

// fenceAfter: writes start at most two thirds of a TTL after a renewal was
// sent, a third before anyone may take over.
func (l *Lease) fenceAfter() time.Duration { return l.s.ttl * 2 / 3 }

// MayWrite reports whether the holder may start a write now: the lease has
// not ended, and less than two thirds of a TTL has passed since the last
// successful renewal was sent, on both the monotonic and the wall clock.
func (l *Lease) MayWrite() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mayWriteLocked()
}

func (l *Lease) mayWriteLocked() bool {
	return l.done == nil && l.fenceProblemLocked() == ""
}

// fenceProblemLocked says why the holder may not write now, or is "".
func (l *Lease) fenceProblemLocked() string {
	limit := l.fenceAfter()
	wall := l.s.clock.Wall()
	if l.s.clock.Mono()-l.sentMono >= limit || wall.Sub(l.sentWall) >= limit {
		return "no renewal succeeded within two thirds of the TTL"
	}
	if back := l.sentWall.Sub(wall); back > l.s.ttl/3 {
		// Stepped back: the wall clock could no longer see a suspension the
		// monotonic clock did not count (a restored VM).
		// Stepped back: the wall clock can no longer see a suspension
		// that the monotonic clock did not count (a restored VM), so
		// the fence would rest on the monotonic clock alone.
		return fmt.Sprintf("the wall clock reads %v before the last renewal was sent (stepped back), so it can no longer measure the fence", back.Round(time.Millisecond))
	}
	return ""
}

// clockProblem says why the holder must not stamp a record at (mono, wall),
// or is "": since the last renewal the wall clock moved more than a third of
// a TTL less than the monotonic clock, or reads that far before the latest
// stamp. Such records would make the lease look older than it is, so the
// holder fences itself. Measured over one renewal interval, so slightly
// different clock rates never add up to a false alarm.
func (l *Lease) clockProblem(mono time.Duration, wall time.Time) string {
	l.mu.Lock()
	behind := (mono - l.sentMono) - wall.Sub(l.sentWall)
	l.mu.Unlock()
	if behind > l.s.ttl/3 {
		return fmt.Sprintf("the wall clock moved %v less than the monotonic clock since the last renewal was sent (stepped back or stuck), more than the third of a TTL that readers' clocks may differ by: records stamped from it would make the lease look older than it is",
			behind.Round(time.Millisecond))
	}
	return l.stamps.clockProblem(mono, wall, l.s.ttl)
}

// Deadline returns the wall-clock time at which the holder fences itself
// unless a renewal succeeds first.
func (l *Lease) Deadline() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sentWall.Add(l.fenceAfter())
}

// Done returns a channel closed when the lease ends: fenced, lost or
// released. Err then says which.
func (l *Lease) Done() <-chan struct{} { return l.fence.Done() }

// Err returns nil while the lease is held, then ErrFenced, ErrLost or
// ErrReleased.
func (l *Lease) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.done
}

// Fence returns a context derived from parent, cancelled with the reason
// (ErrFenced, ErrLost or ErrReleased) as its cause when the lease ends,
// synchronously inside whatever ends it. Run the work under the lease with it.
func (l *Lease) Fence(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	token := new(byte)
	l.mu.Lock()
	if l.done != nil {
		reason := l.done
		l.mu.Unlock()
		cancel(reason)
		return ctx, func() {}
	}
	if l.children == nil {
		l.children = map[*byte]context.CancelCauseFunc{}
	}
	l.children[token] = cancel
	l.mu.Unlock()
	return ctx, func() {
		l.mu.Lock()
		delete(l.children, token)
		l.mu.Unlock()
		cancel(context.Canceled)
	}
}

// armLocked schedules the next look at the fence deadline; l.mu is held.
func (l *Lease) armLocked() {
	if l.stopTimer != nil {
		l.stopTimer()
	}
	left := l.fenceAfter() - (l.s.clock.Mono() - l.sentMono)
	l.stopTimer = l.s.clock.AfterFunc(max(min(left, fencePoll), 0), l.checkFence)
}

// checkFence runs on the fence timer: it ends the lease past the deadline on
// either clock, or looks again later.
func (l *Lease) checkFence() {
	l.mu.Lock()
	if l.done != nil {
		l.mu.Unlock()
		return
	}
	if l.mayWriteLocked() {
		l.armLocked()
		l.mu.Unlock()
		return
	}
	why := l.fenceProblemLocked()
	l.mu.Unlock()
	l.end(ErrFenced, nil, why)
}

// end finishes the lease with reason, once, and reports it.
func (l *Lease) end(reason error, previous *admin.Record, detail string) {
	l.mu.Lock()
	if l.done != nil {
		l.mu.Unlock()
		return
	}
	l.done, l.why = reason, detail
	if l.stopTimer != nil {
		l.stopTimer()
	}
	v := l.version
	children := l.children
	l.children = nil
	l.mu.Unlock()
	l.stopFence(reason)
	for _, cancel := range children {
		cancel(reason)
	}
	kind := EventFenced
	switch {
	case errors.Is(reason, ErrReleased):
		return // Release reports what became of the release itself
	case errors.Is(reason, ErrLost):
		kind = EventLost
	}
	l.emit(Event{Kind: kind, Key: l.key, InstanceID: l.s.id, Version: v, Time: l.s.clock.Wall(), Previous: previous,
		Detail: detail, Err: reason})
}

// fencedError is ErrFenced with why the lease was fenced, if it said.
func (l *Lease) fencedError() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.why == "" {
		return ErrFenced
	}
	return fmt.Errorf("%w: %s", ErrFenced, l.why)
}
