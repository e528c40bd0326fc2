package lease

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/mushroomdb/bucketlease/clock"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/internal/oldlease"
)

// fencePoll bounds how long the fence timer sleeps between looks at the
// wall clock, which Go's timers do not follow: after a suspension the
// monotonic timer would fire late, the wall clock check does not.
const fencePoll = time.Second

// Lease is a held lease on {prefix}/LEASE. Keep it renewed (Keep), write
// only while MayWrite reports true (or through Bucket, which checks for
// you), and Release it on shutdown. Its methods are safe for concurrent use.
type Lease struct {
	b      driver.Bucket
	prefix string // without trailing slashes
	key    string
	s      *settings
	caps   driver.Capabilities
	fence  context.Context
	// stopFence ends the lease's fence context with a cause.
	stopFence context.CancelCauseFunc

	// turn admits one renewal or release at a time; a channel, so that
	// Release can wait for it under its context.
	turn chan struct{}

	stamps *stamps     // the contender's: renewed_at increases across all its writes
	sent   sentRecords // the records this lease sent whose write may have landed

	mu        sync.Mutex
	rec       Record
	version   driver.Version
	sentMono  time.Duration // when the last successful write was sent
	sentWall  time.Time
	done      error // ErrFenced, ErrLost or ErrReleased once the lease is over
	stopTimer func() bool
	children  map[*byte]context.CancelCauseFunc // the live contexts from Fence
}

func newLease(c *Contender, b driver.Bucket, st stamp, v driver.Version) *Lease {
	l := &Lease{b: b, prefix: strings.TrimRight(c.prefix, "/"), key: c.key, s: c.s, caps: b.Capabilities(), rec: st.rec, version: v,
		sentMono: st.mono, sentWall: st.wall, turn: make(chan struct{}, 1), stamps: c.stamps}
	l.sent.add(st.rec)
	l.fence, l.stopFence = context.WithCancelCause(context.Background())
	l.mu.Lock()
	l.armLocked()
	l.mu.Unlock()
	return l
}

// Key returns the key of the lease object.
func (l *Lease) Key() string { return l.key }

// InstanceID returns the id this lease is held under.
func (l *Lease) InstanceID() string { return l.s.id }

// TTL returns the lease's TTL.
func (l *Lease) TTL() time.Duration { return l.s.ttl }

// Exclusion reports how strongly this lease keeps a second writer out on
// its service: Conditional, or BestEffort under EnvConditional=off.
func (l *Lease) Exclusion() driver.Exclusion { return l.caps.Exclusion }

// Version returns the version of the lease object we last wrote.
func (l *Lease) Version() driver.Version {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.version
}

// Record returns the record we last wrote.
func (l *Lease) Record() Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rec
}

// fenceAfter is how long after a renewal was sent the holder may start
// writes: two thirds of a TTL, a third before anyone may take over.
func (l *Lease) fenceAfter() time.Duration { return l.s.ttl * 2 / 3 }

// MayWrite reports whether the holder may start a write now: the lease is
// neither lost nor released, and less than two thirds of a TTL has passed
// since the last successful renewal was sent, on the monotonic clock and on
// the wall clock alike.
func (l *Lease) MayWrite() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mayWriteLocked()
}

func (l *Lease) mayWriteLocked() bool {
	if l.done != nil {
		return false
	}
	limit := l.fenceAfter()
	return l.s.clock.Mono()-l.sentMono < limit && l.s.clock.Wall().Sub(l.sentWall) < limit
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

// Fence returns a context derived from parent that is cancelled when the
// lease ends, with the reason (ErrFenced, ErrLost or ErrReleased) as its
// cause. Run the work you do under the lease with it, and it stops the
// moment the holder must stop.
//
// The context is cancelled synchronously, inside whatever ends the lease
// (the fence timer, a renewal that finds the lease lost, Release), before
// that call returns: no goroutine hop lies between the end of the lease and
// the cancellation of its work.
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

// checkFence runs on the fence timer: it ends the lease if the deadline has
// passed on either clock, and otherwise looks again later.
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
	l.mu.Unlock()
	l.end(ErrFenced, nil, "no renewal succeeded within two thirds of the TTL")
}

// end finishes the lease with reason, once, and reports it.
func (l *Lease) end(reason error, previous *Record, detail string) {
	l.mu.Lock()
	if l.done != nil {
		l.mu.Unlock()
		return
	}
	l.done = reason
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
	l.s.emit(Event{Kind: kind, Key: l.key, InstanceID: l.s.id, Version: v, Time: l.s.clock.Wall(), Previous: previous,
		Detail: detail, Err: reason})
}

// Renew extends the lease with one conditional write (If-Match on the
// version we last wrote). It returns nil on success; an error wrapping
// ErrLost if the lease object was taken over, removed or marked released,
// or now holds a record this lease did not write (wrapping ErrInstanceInUse
// too when that record names our own instance id); ErrReleased after
// Release; ErrFenced once the fence deadline has passed; and any other
// error for a renewal that failed and may be retried until the fence
// deadline. A renewal whose reply was lost is recognised as our own on the
// next attempt: its record is exactly one this lease sent.
//
// A renewal counts only if its reply arrives before the fence deadline: one
// that lands later fences the lease all the same, because work under it has
// already been told to stop. Once fenced, Renew writes nothing: it reads the
// lease object and returns ErrLost if the lease has been taken over,
// ErrFenced otherwise (acquire again, with the same Contender, to resume:
// it takes back its own record at once).
func (l *Lease) Renew(ctx context.Context) error {
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
	if !l.mayWriteLocked() {
		l.mu.Unlock()
		l.end(ErrFenced, nil, "no renewal succeeded within two thirds of the TTL")
		return ErrFenced
	}
	rec, over := l.rec, l.version
	l.mu.Unlock()

	mono, wall := l.s.clock.Mono(), l.s.clock.Wall()
	if err := checkWall(wall); err != nil {
		return err // retried, and fenced in time, like any failed renewal
	}
	rec.RenewedAt = l.stamps.renewed(wall)
	l.sent.add(rec)
	// The write ends with the lease: a renewal still in flight at the
	// fence deadline, or when Release stops the lease, is abandoned.
	wctx, cancel := l.Fence(ctx)
	v, err := l.b.Put(wctx, l.key, rec.Encode(), driver.IfMatch(over))
	cancel()
	if err != nil {
		cur, curV, rerr := readLease(ctx, l.b, l.key)
		switch {
		case errors.Is(rerr, driver.ErrNotExist):
			l.end(ErrLost, nil, "the lease object was removed")
			return l.Err()
		case rerr != nil:
			return fmt.Errorf("renew %s: %w", l.key, err)
		case cur.err == nil && landed(cur.rec, rec, curV, over):
			v = curV // this renewal landed; its answer was lost
		case cur.err == nil && l.sent.has(cur.rec) && curV != over:
			// An earlier renewal of ours landed after we gave up on it.
			// Adopt its version; this renewal did not land, so the fence
			// does not move, and the next attempt will.
			l.mu.Lock()
			l.version, l.rec = curV, cur.rec
			l.mu.Unlock()
			return fmt.Errorf("renew %s: adopted a late renewal of our own; retry: %w", l.key, err)
		case cur.err == nil && l.sent.has(cur.rec):
			return fmt.Errorf("renew %s: %w", l.key, err) // unchanged: the write did not land
		default:
			return l.lose(cur)
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
	if !l.mayWriteLocked() {
		// The reply came after the fence deadline; work under the lease
		// has been told to stop (or is being told now), so the lease
		// stays fenced. Its record is ours: acquiring again with the same
		// Contender takes it back at once.
		l.mu.Unlock()
		l.end(ErrFenced, nil, "the renewal's reply came after the fence deadline")
		return ErrFenced
	}
	l.sentMono, l.sentWall = mono, wall
	l.armLocked()
	l.mu.Unlock()
	l.s.emit(Event{Kind: EventRenewed, Key: l.key, InstanceID: l.s.id, Version: v, Time: wall})
	return nil
}

// lose ends the lease because the lease object holds something this lease
// did not write, and returns the error that says what.
func (l *Lease) lose(cur readResult) error {
	var prev *Record
	if cur.err == nil {
		prev = &cur.rec
	}
	var reason error = ErrLost
	detail := "the lease object names another instance"
	switch {
	case cur.err != nil:
		detail = "the lease object is not a lease record: " + cur.err.Error()
	case cur.rec.InstanceID == BreakerID && cur.rec.TTLSeconds == 0:
		detail = "an operator broke the lease (bucketlease break)"
	case cur.rec.TTLSeconds == 0:
		detail = "the lease object was marked released"
	case cur.rec.InstanceID == l.s.id && !oldlease.AdoptByInstanceID.Load():
		detail = "the lease object names this instance id but this lease did not write it: another process with the same instance id took it"
		reason = fmt.Errorf("%w: %w", ErrLost, ErrInstanceInUse)
	}
	l.end(reason, prev, detail)
	return l.Err()
}

// take waits for the lease's turn to renew or release, or for ctx.
func (l *Lease) take(ctx context.Context) error {
	select {
	case l.turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (l *Lease) give() { <-l.turn }

// checkLost is Renew for a fenced lease: it writes nothing, but reads the
// lease object so that a holder that was taken over learns so (ErrLost).
// The lease is still ours only while the object holds a record it wrote.
func (l *Lease) checkLost(ctx context.Context) error {
	cur, _, err := readLease(ctx, l.b, l.key)
	if err != nil && !errors.Is(err, driver.ErrNotExist) {
		return ErrFenced
	}
	if err == nil && cur.err == nil && (l.sent.has(cur.rec) || (oldlease.AdoptByInstanceID.Load() && cur.rec.InstanceID == l.s.id)) {
		return ErrFenced
	}
	var prev *Record
	if err == nil && cur.err == nil {
		prev = &cur.rec
	}
	l.mu.Lock()
	l.done = ErrLost
	l.mu.Unlock()
	l.s.emit(Event{Kind: EventLost, Key: l.key, InstanceID: l.s.id, Version: l.Version(), Time: l.s.clock.Wall(),
		Previous: prev, Err: ErrLost, Detail: "found taken over after fencing"})
	return ErrLost
}

// Release ends the lease and marks it released, so that another instance
// may take it at once. It first stops all writing under the lease
// (MayWrite turns false, Bucket refuses, Fence contexts are cancelled, a
// renewal in flight is abandoned), then waits for its turn and releases
// within ctx.
//
// Release never removes or overwrites a record that this lease did not
// write, on any service, whatever its driver declares: it overwrites our
// record with If-Match on the version we last wrote, by a released record
// (ttl_s 0, stale to every reader at once), and the acquire probe of this
// very lease proved that the service refuses If-Match on a version that is
// not current. It never deletes: many services that serve the S3 API ignore
// conditions on DELETE. If the record changed, Release reads it back: a
// later record of this lease (a renewal whose reply was lost) is released
// in turn; anything else is left alone, and Release returns nil. A lease
// already lost is left alone. It returns an error only when a record of
// ours may still be there: the release failed.
func (l *Lease) Release(ctx context.Context) error {
	if oldlease.ReleaseWaitsForRenewal.Load() {
		if err := l.take(context.WithoutCancel(ctx)); err != nil {
			return err
		}
		l.end(ErrReleased, nil, "")
	} else {
		l.end(ErrReleased, nil, "")
		if err := l.take(ctx); err != nil {
			return fmt.Errorf("release %s: waiting for a renewal in flight: %w", l.key, err)
		}
	}
	defer l.give()
	l.mu.Lock()
	done, v, rec := l.done, l.version, l.rec
	l.mu.Unlock()
	if errors.Is(done, ErrLost) {
		return nil
	}
	left, err := release(ctx, l.b, l.key, v, rec, &l.sent, l.stamps, l.s.clock.Wall())
	ev := Event{Kind: EventReleased, Key: l.key, InstanceID: l.s.id, Version: v, Time: l.s.clock.Wall(),
		Detail: "marked the lease object released (ttl_s 0); anyone may take it at once"}
	if left != "" {
		ev.Detail = "nothing to release: " + left
	}
	if err != nil {
		err = fmt.Errorf("release %s: %w", l.key, err)
		ev.Kind, ev.Err, ev.Detail = EventReleaseFailed, err, "a record of ours may be left until it goes stale"
	}
	l.s.emit(ev)
	return err
}

// release marks our record at version v released, with If-Match (or, under
// the oldlease switch, deletes it where the driver declares a conditional
// delete). If the record changed, it reads it back: a later record that
// sent holds (a write of ours whose reply was lost) is released in turn;
// anyone else's is left alone. It returns why nothing was written, or "" if
// our record is now marked released.
func release(ctx context.Context, b driver.Bucket, key string, v driver.Version, rec Record, sent *sentRecords, st *stamps, now time.Time) (left string, err error) {
	for range 3 {
		if oldlease.DeleteOnRelease.Load() && b.Capabilities().ConditionalDelete {
			err = b.Delete(ctx, key, driver.IfMatch(v))
		} else {
			rel := rec
			rel.RenewedAt, rel.TTLSeconds = st.renewed(now), 0
			sent.add(rel)
			_, err = b.Put(ctx, key, rel.Encode(), driver.IfMatch(v))
		}
		if err == nil {
			return "", nil
		}
		cur, curV, rerr := readLease(ctx, b, key)
		switch {
		case errors.Is(rerr, driver.ErrNotExist):
			return "the lease object is gone", nil
		case rerr != nil:
			return "", fmt.Errorf("%w (and reading it back failed: %v)", err, rerr)
		case cur.err == nil && oldlease.AdoptByInstanceID.Load() && cur.rec.InstanceID == rec.InstanceID && cur.rec.TTLSeconds != 0:
			v, rec = curV, cur.rec // the old, trusting adoption
			continue
		case cur.err != nil:
			return "the lease object is not a lease record; left alone", nil
		case !sent.has(cur.rec):
			return fmt.Sprintf("the lease object now holds a record of instance %s that this lease did not write; left alone", cur.rec.InstanceID), nil
		case cur.rec.TTLSeconds == 0:
			return "", nil // our released record landed; its reply was lost
		}
		v, rec = curV, cur.rec // ours and still live: release that version
	}
	return "", fmt.Errorf("the lease object could not be marked released: %w", err)
}

// Keep renews the lease every TTL/3 until ctx is done or the lease ends. A
// failed renewal is retried every Options.RetryInterval until the fence
// deadline. It returns ErrLost or ErrFenced when the lease ends that way,
// nil after Release, and ctx's error when ctx is done; it starts no
// goroutine that outlives it.
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
		err := l.Renew(rctx)
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
			l.s.emit(Event{Kind: EventRenewalFailed, Key: l.key, InstanceID: l.s.id, Version: l.Version(),
				Time: l.s.clock.Wall(), Err: err, Detail: "retrying until " + l.Deadline().Format(time.RFC3339)})
			retrying = true
		}
	}
}

// keepResult is what Keep returns once the lease has ended.
func (l *Lease) keepResult() error {
	if err := l.Err(); !errors.Is(err, ErrReleased) {
		return err
	}
	return nil
}

// sleep waits d on the lease's clock, or until ctx is done or the lease
// ends, whichever is first.
func sleep(ctx context.Context, l *Lease, d time.Duration) error {
	ctx, cancel := l.Fence(ctx)
	defer cancel()
	return clock.Sleep(ctx, l.s.clock, d)
}

// Prefix returns the prefix the lease is on, without trailing slashes: the
// lease object is Prefix()+"/LEASE" (or "LEASE" for the empty prefix).
func (l *Lease) Prefix() string { return l.prefix }

// Bucket returns the bucket for the worker's own writes under the lease,
// with keys relative to the lease's prefix: Put(ctx, "chunks/0001", …)
// writes {prefix}/chunks/0001, whatever form the prefix came in ("db1",
// "db1/", or "" for a whole bucket). It refuses to start a Put or Delete
// once MayWrite is false (with an error wrapping ErrFenced, ErrLost or
// ErrReleased), and cancels one in flight the moment the lease ends. Reads
// pass through. It refuses a key that starts with "/" and any write to the
// lease object itself, which only the lease writes.
func (l *Lease) Bucket() driver.Bucket { return fencedBucket{l} }

type fencedBucket struct{ l *Lease }

func (f fencedBucket) Capabilities() driver.Capabilities { return f.l.b.Capabilities() }

// full returns the bucket key of a key relative to the prefix.
func (f fencedBucket) full(op, key string, cond driver.Condition) (string, error) {
	if key == "" || strings.HasPrefix(key, "/") {
		return "", &driver.OpError{Driver: "lease", Op: op, Key: key, Cond: cond, Kind: driver.ErrInvalidKey,
			Err: errors.New("keys of Lease.Bucket are relative to the lease's prefix: not empty, no leading slash")}
	}
	if f.l.prefix == "" {
		return key, nil
	}
	return f.l.prefix + "/" + key, nil
}

func (f fencedBucket) Get(ctx context.Context, key string) (io.ReadCloser, driver.Version, error) {
	full, err := f.full("get", key, driver.Condition{})
	if err != nil {
		return nil, "", err
	}
	return f.l.b.Get(ctx, full)
}

// guard runs op on the full key under the fence, or refuses to start it.
func (f fencedBucket) guard(ctx context.Context, op, key string, cond driver.Condition, do func(context.Context, string) error) error {
	full, err := f.full(op, key, cond)
	if err != nil {
		return err
	}
	if full == f.l.key {
		return &driver.OpError{Driver: "lease", Op: op, Key: full, Cond: cond,
			Err: errors.New("refused: the lease object is written only by the lease itself")}
	}
	if !f.l.MayWrite() {
		reason := f.l.Err()
		if reason == nil {
			reason = ErrFenced
		}
		return &driver.OpError{Driver: "lease", Op: op, Key: full, Cond: cond, Err: fmt.Errorf("refused to start: %w", reason)}
	}
	fctx, cancel := f.l.Fence(ctx)
	defer cancel()
	err = do(fctx, full)
	if err != nil && ctx.Err() == nil && fctx.Err() != nil {
		return &driver.OpError{Driver: "lease", Op: op, Key: full, Cond: cond,
			Err: fmt.Errorf("cancelled in flight: %w (%w)", context.Cause(fctx), err)}
	}
	return err
}

func (f fencedBucket) Put(ctx context.Context, key string, data []byte, cond driver.Condition) (driver.Version, error) {
	var v driver.Version
	err := f.guard(ctx, "put", key, cond, func(ctx context.Context, full string) error {
		var err error
		v, err = f.l.b.Put(ctx, full, data, cond)
		return err
	})
	return v, err
}

func (f fencedBucket) Delete(ctx context.Context, key string, cond driver.Condition) error {
	return f.guard(ctx, "delete", key, cond, func(ctx context.Context, full string) error {
		return f.l.b.Delete(ctx, full, cond)
	})
}
