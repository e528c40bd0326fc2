package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mushroomdb/bucketlease/clock"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// renew extends the lease with one write, If-Match on the version we last
// wrote. It returns ErrLost if the object holds a record this lease did not
// write (with ErrInstanceInUse if it names our id), ErrReleased after
// Release, ErrFenced past the fence deadline, or a retryable error. A reply
// that arrives after the fence deadline fences all the same (work was told
// to stop). Once fenced it writes nothing, only reads, to report ErrLost.
func (l *Lease) renew(ctx context.Context) error {
	if err := l.take(ctx); err != nil {
		return err
	}
	defer l.give()
	l.mu.Lock()
	if l.done != nil {
		err := l.done
		l.mu.Unlock()
		if errors.Is(err, ErrFenced) {
			return l.checkLost(ctx)
		}
		return err
	}
	if why := l.fenceProblemLocked(); why != "" {
		l.mu.Unlock()
		l.end(ErrFenced, nil, why)
		return fmt.Errorf("%w: %s", ErrFenced, why)
	}
	rec, over := l.rec, l.version
	l.mu.Unlock()

	mono, wall := l.s.clock.Mono(), l.s.clock.Wall()
	if err := checkWall(wall); err != nil {
		return err // retried, and fenced in time, like any failed renewal
	}
	if why := l.clockProblem(mono, wall); why != "" {
		l.end(ErrFenced, nil, why)
		return fmt.Errorf("%w: %s", ErrFenced, why)
	}
	rec.RenewedAt = l.stamps.renewed(wall)
	if rec.Began.IsZero() {
		rec.Began = l.began
	}
	l.sent.add(rec)
	l.past.add(rec)
	// In flight at the fence deadline, or at Release, the write is abandoned.
	wctx, cancel := l.Fence(ctx)
	a, svc, err := admin.TimedCall(l.s.clock, func() (driver.Attrs, error) {
		return l.pace.put(wctx, l.b, l.key, rec.Encode(), driver.IfMatch(over), 0)
	})
	v := a.Version
	cancel()
	if err != nil {
		if v, err = l.readBack(ctx, rec, over, err); err != nil {
			return err
		}
	}
	l.mu.Lock()
	l.version, l.rec = v, rec
	l.sent.forgetAllBut(rec)
	if l.done != nil { // ended while the request was in flight
		err := l.done
		l.mu.Unlock()
		return err
	}
	if svc != nil {
		l.svc = svc
	}
	if why := svc.OffsetProblem(l.s.ttl); why != "" {
		// Landed, stamped by a clock the service shows is wrong: stop now.
		l.mu.Unlock()
		l.end(fmt.Errorf("%w: %w", ErrFenced, ErrClock), nil, why)
		return fmt.Errorf("renew %s: %w: %w: %s", l.key, ErrFenced, ErrClock, why)
	}
	if !l.mayWriteLocked() {
		// The reply came after the fence deadline: work has been told to
		// stop, so the lease stays fenced (its record is ours: the same
		// Contender takes it back at once).
		l.mu.Unlock()
		l.end(ErrFenced, nil, "the renewal's reply came after the fence deadline")
		return ErrFenced
	}
	l.sentMono, l.sentWall = mono, wall
	l.armLocked()
	l.mu.Unlock()
	l.emit(Event{Kind: EventRenewed, Key: l.key, InstanceID: l.s.id, Version: v, Time: wall})
	return nil
}

// readBack finds out, after the renewal of rec over over failed with err,
// whether it landed anyway (its version), or the error renew returns.
func (l *Lease) readBack(ctx context.Context, rec admin.Record, over driver.Version, err error) (driver.Version, error) {
	cur, curV, rerr := admin.Read(ctx, l.s.clock, l.b, l.key)
	switch {
	case errors.Is(rerr, driver.ErrNotExist):
		l.end(ErrLost, nil, "the lease object was removed")
		return "", l.Err()
	case rerr != nil:
		return "", fmt.Errorf("renew %s: %w", l.key, err)
	case cur.Err == nil && landed(cur.Record, rec, curV, over):
		return curV, nil // this renewal landed; its answer was lost
	case cur.Err == nil && l.sent.has(cur.Record) && curV != over:
		// An earlier renewal landed late: adopt its version; the fence
		// does not move.
		l.mu.Lock()
		l.version, l.rec = curV, cur.Record
		l.mu.Unlock()
		return "", fmt.Errorf("renew %s: adopted a late renewal of our own; retry: %w", l.key, err)
	case cur.Err == nil && l.sent.has(cur.Record):
		return "", fmt.Errorf("renew %s: %w", l.key, err) // unchanged: the write did not land
	case cur.Err == nil && l.past.has(cur.Record):
		// A replaced record of ours: a stale read from a lagging
		// replica, not a takeover. Retry; fence if it persists.
		return "", fmt.Errorf("renew %s: read back an older record of this lease (a stale read); retry: %w", l.key, err)
	default:
		return "", l.lose(cur)
	}
}

// lose ends the lease over a foreign object and returns the error saying so.
func (l *Lease) lose(cur admin.Reading) error {
	var prev *admin.Record
	if cur.Err == nil {
		prev = &cur.Record
	}
	var reason error = ErrLost
	detail := "the lease object names another instance"
	switch {
	case cur.Err != nil:
		detail = "the lease object is not a lease record: " + cur.Err.Error()
	case cur.Record.InstanceID == admin.BreakerID:
		detail = "an operator broke the lease (bucketlease break)"
	case cur.Record.TTLSeconds == 0:
		detail = "the lease object was marked released"
	case cur.Record.InstanceID == l.s.id:
		detail = "the lease object names this instance id but this lease did not write it: another process with the same instance id took it"
		reason = fmt.Errorf("%w: %w", ErrLost, ErrInstanceInUse)
	}
	l.end(reason, prev, detail)
	return l.Err()
}

// take waits for the lease's turn to renew or release, or for ctx.
func (l *Lease) take(ctx context.Context) error {
	// A free turn is taken even under an ended ctx, so that the outcome
	// does not rest on which of two ready cases select picks.
	select {
	case l.turn <- struct{}{}:
	default:
		select {
		case l.turn <- struct{}{}:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	l.mu.Lock()
	l.inTurn = true
	l.mu.Unlock()
	return nil
}

// give ends the turn, then reports the events raised during it, so that an
// OnEvent callback may call Release without waiting for itself.
func (l *Lease) give() {
	l.mu.Lock()
	queued := l.queued
	l.queued, l.inTurn = nil, false
	l.mu.Unlock()
	<-l.turn
	for _, e := range queued {
		l.s.emit(e)
	}
}

// emit reports e now, or after the current turn.
func (l *Lease) emit(e Event) {
	e.Epoch = l.epoch
	l.mu.Lock()
	if l.inTurn {
		l.queued = append(l.queued, e)
		l.mu.Unlock()
		return
	}
	l.mu.Unlock()
	l.s.emit(e)
}

// checkLost is renew for a fenced lease: it only reads, reporting ErrLost
// once the object holds no record this lease wrote.
func (l *Lease) checkLost(ctx context.Context) error {
	cur, _, err := admin.Read(ctx, l.s.clock, l.b, l.key)
	if err != nil && !errors.Is(err, driver.ErrNotExist) {
		return l.fencedError()
	}
	if err == nil && cur.Err == nil && (l.sent.has(cur.Record) || l.past.has(cur.Record)) {
		return l.fencedError()
	}
	var prev *admin.Record
	if err == nil && cur.Err == nil {
		prev = &cur.Record
	}
	l.mu.Lock()
	l.done = ErrLost
	l.mu.Unlock()
	l.emit(Event{Kind: EventLost, Key: l.key, InstanceID: l.s.id, Version: l.lastVersion(), Time: l.s.clock.Wall(),
		Previous: prev, Err: ErrLost, Detail: "found taken over after fencing"})
	return ErrLost
}

// Keep renews every TTL/3 until ctx is done or the lease ends, retrying a
// failed renewal every TTL/15 (at least 100 ms) until the fence deadline. It
// returns ErrLost or ErrFenced, nil after Release, or ctx's error.
func (l *Lease) Keep(ctx context.Context) error {
	interval := l.s.ttl / 3
	retrying := false
	for {
		wait := l.s.retry
		if !retrying {
			l.mu.Lock()
			wait = interval - (l.s.clock.Mono() - l.sentMono) // from when the last renewal was sent
			l.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-l.Done():
			return l.keepResult()
		default:
		}
		if err := sleep(ctx, l, wait); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return l.keepResult()
		}
		rctx, cancel := l.Fence(ctx)
		err := l.renew(rctx)
		cancel()
		switch {
		case err == nil:
			retrying = false
		case errors.Is(err, ErrLost), errors.Is(err, ErrFenced), errors.Is(err, ErrReleased):
			return l.keepResult()
		case ctx.Err() != nil:
			return ctx.Err()
		default:
			if l.Err() != nil {
				return l.keepResult()
			}
			l.emit(Event{Kind: EventRenewalFailed, Key: l.key, InstanceID: l.s.id, Version: l.lastVersion(),
				Time: l.s.clock.Wall(), Err: err, Detail: "retrying until " + l.Deadline().Format(time.RFC3339)})
			retrying = true
		}
	}
}

func (l *Lease) keepResult() error {
	if err := l.Err(); !errors.Is(err, ErrReleased) {
		return err
	}
	return nil
}

// sleep waits d on the lease's clock, or until ctx or the lease ends.
func sleep(ctx context.Context, l *Lease, d time.Duration) error {
	ctx, cancel := l.Fence(ctx)
	defer cancel()
	return clock.Sleep(ctx, l.s.clock, d)
}
