package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/internal/objects"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// maxContention bounds how often one Acquire starts over when the object
// changes between its read and its write.
const maxContention = 3

// try makes one attempt to take the lease: a write with If-None-Match: * on
// a free key, or If-Match over a stale, released, long-suspect or own
// record, then the probes of both preconditions on the lease object. It
// returns a *HeldError when another instance holds the lease, and wraps
// ErrPreconditionsIgnored, leaving no lease behind, when the service accepts
// a write it should refuse. If ctx ends after the lease object was written,
// it finishes (up to ten seconds more) and releases what it made.
func (c *Contender) try(ctx context.Context) (*Lease, error) {
	b, err := c.s.bucketFor(c.bucket, c.key)
	if err != nil {
		return nil, err
	}
	c.journal.lock() // at every attempt, until a dead predecessor's lock is free
	a := &attempt{c: c, b: b, pace: newPacer(c.s.clock, b.Capabilities())}
	defer a.settle()
	actx, unshield := a.shield.on(ctx)
	defer unshield()
	for range maxContention {
		l, err := a.run(actx)
		if ctx.Err() != nil {
			return a.interrupted(ctx, l, err)
		}
		if !errors.Is(err, errContended) {
			return l, err
		}
	}
	return nil, fmt.Errorf("acquire %s: the lease object kept changing between read and write; try again", c.key)
}

// errContended restarts an attempt: the object changed under us.
var errContended = errors.New("contended")

// attempt is one Acquire call's state.
type attempt struct {
	c       *Contender
	b       driver.Bucket
	proven  bool                // provePath passed
	scratch string              // the proof's key, until its delete starts
	deletes []<-chan error      // the outcomes of the deletes started
	svc     *admin.ServiceClock // at the latest read; nil if not reported
	shield  shield              // keeps the attempt going past cancellation once it wrote
	cleaned bool                // cleanUp ran; its error says what it left
	// wrote: a write of the lease object was sent; after is the service's
	// clock of the latest answer since, so the lease began no later than
	// its Date plus its resolution.
	wrote bool
	after *admin.ServiceClock
	pace  *pacer // spaces writes to a key and resends rate-limited ones; the lease keeps it
}

// run is one pass of Acquire (docs/promises.md, "How it keeps them"): check
// the clocks and the journal, read the lease object, then create it if free
// or judge its record. Every write that would establish the lease waits for
// provePath, and is followed by the probes on the lease object (probe).
func (a *attempt) run(ctx context.Context) (*Lease, error) {
	s := a.c.s
	if err := checkWall(s.clock.Wall()); err != nil {
		return nil, err
	}
	if err := a.c.checkBlocked(); err != nil {
		return nil, err
	}
	if why := a.c.stamps.clockProblem(s.clock.Mono(), s.clock.Wall(), s.ttl); why != "" {
		return nil, fmt.Errorf("acquire %s: %w: %s", a.c.key, ErrClock, why)
	}
	st := a.stamp()
	// Read first, so that on a path that drops the precondition a refused
	// acquire writes nothing over a live holder; only a free key is written
	// blind, with If-None-Match: *.
	cur, curV, err := a.read(ctx)
	if why := cur.Service.OffsetProblem(s.ttl); why != "" {
		return nil, fmt.Errorf("acquire %s: %w: %s", a.c.key, ErrClock, why)
	}
	switch {
	case errors.Is(err, driver.ErrNotExist):
		return a.create(ctx, st)
	case err != nil:
		return nil, fmt.Errorf("acquire %s: read the lease object: %w", a.c.key, err)
	}
	return a.judge(ctx, st, cur, curV)
}

// create writes our epoch-less record with If-None-Match: * over the free
// key once the path is proven; settleEpoch gives it an epoch. After a
// refusal (someone created the key) or an unknown outcome the object is
// read again.
func (a *attempt) create(ctx context.Context, st stamp) (*Lease, error) {
	if err := a.provePath(ctx); err != nil {
		return nil, err
	}
	st = a.restamp(st)
	v, err := a.put(ctx, st, driver.IfAbsent())
	a.dropScratch(ctx)
	if err == nil {
		return a.settleEpoch(ctx, st, v, false)
	}
	ifAbsentProven := errors.Is(err, driver.ErrPrecondition)
	cur, curV, rerr := a.read(ctx)
	switch {
	case errors.Is(rerr, driver.ErrNotExist) && ifAbsentProven:
		return nil, errContended // deleted since our write was refused
	case errors.Is(rerr, driver.ErrNotExist):
		return nil, fmt.Errorf("acquire %s: %w", a.c.key, err)
	case rerr != nil:
		return nil, fmt.Errorf("acquire %s: read the lease object: %w", a.c.key, rerr)
	// Our write landed; its reply was lost or its retry refused.
	case cur.Err == nil && cur.Record.Same(st.rec):
		// This very write landed; its reply was lost or a retry of it
		// was refused. Adopt it.
		return a.settleEpoch(ctx, st, curV, ifAbsentProven)
	case ifAbsentProven:
		return nil, errContended // another instance created it: judge it afresh
	}
	// Outcome unknown, object changed: judge it as if read before.
	return a.judge(ctx, st, cur, curV)
}

// judge decides on the lease object read at curV: our own record is taken
// back (reacquire), a fresh one naming our id is a twin, stale or released
// is taken over, fresh is held (ErrHeld), and a suspect record or non-record
// is taken over once unchanged for one of our TTLs (suspect).
func (a *attempt) judge(ctx context.Context, st stamp, cur admin.Reading, curV driver.Version) (*Lease, error) {
	if cur.Err == nil {
		st.seen = &cur.Record
	}
	if cur.Err == nil && a.c.owns(cur.Record) {
		return a.reacquire(ctx, cur.Record, curV)
	}
	now := st.wall
	state, takeoverAt := admin.Suspect, time.Time{}
	if cur.Err == nil {
		state, takeoverAt = admin.Judge(cur.Record, now, cur.Service)
	}
	if state == admin.Fresh && cur.Record.InstanceID == a.c.s.id {
		return a.twin(st, cur, curV, takeoverAt)
	}
	a.c.twin = suspectWatch{}
	switch state {
	case admin.Stale, admin.Released:
		st.previous, st.follows = &cur.Record, &cur.Record
		st.detail = fmt.Sprintf("took over a %s lease of instance %s", state, cur.Record.InstanceID)
		return a.takeOver(ctx, st, curV, EventTookOver)
	case admin.Fresh:
		return nil, &HeldError{Status: admin.Status{Key: a.c.key, Version: curV, Record: &cur.Record, State: admin.Fresh,
			TakeoverAt: takeoverAt, Now: now, Service: cur.Service}}
	}
	return a.suspect(ctx, st, cur, curV)
}

// reacquire takes back rec, at v, which this contender (or, with a state
// directory, this instance's dead previous process) wrote.
func (a *attempt) reacquire(ctx context.Context, rec admin.Record, v driver.Version) (*Lease, error) {
	if err := a.c.endHeld(); err != nil {
		return nil, err
	}
	adopted := a.c.journal.predecessors(rec) && !a.c.sent.has(rec)
	st := a.stamp()
	st.follows = &rec
	st.detail = "re-acquired a lease this contender wrote before"
	if adopted {
		st.detail = "adopted the lease this instance's previous process left (its state directory's lock was free, so that process is gone)"
	}
	return a.takeOver(ctx, st, v, EventAcquired)
}

// twin handles a fresh record naming our id that this contender did not
// write: a restart, or another live process with the same id. It is taken
// over only once stale by our clock: a suspended writer fences itself by its
// wall clock alone, which may lag ours by the allowed skew, so only the
// record's age bounds when it stopped. A change while watched means a live
// process renews it: ErrInstanceInUse.
func (a *attempt) twin(st stamp, cur admin.Reading, v driver.Version, takeoverAt time.Time) (*Lease, error) {
	rec := cur.Record
	w := &a.c.twin
	if w.seen && w.version != v {
		*w = suspectWatch{}
		return nil, fmt.Errorf("acquire %s: %w: the lease object names instance %s but was not written by this process, and it changed while this process watched it (to version %s, renewed %s): another live process is renewing it. Give each process its own instance id",
			a.c.key, ErrInstanceInUse, rec.InstanceID, v, rec.RenewedAt.Format(time.RFC3339Nano))
	}
	w.observe(v, a.c.s.clock.Mono())
	return nil, &HeldError{SameID: true, Status: admin.Status{Key: a.c.key, Version: v, Record: &rec, State: admin.Fresh,
		Reason:     "it names this instance id but this process did not write it: a restart of this instance, or another live process with the same id",
		TakeoverAt: takeoverAt, Now: st.wall, Service: cur.Service}}
}

// suspect takes over a suspect record or non-record after one of our TTLs
// unchanged, timed from each read's answer.
func (a *attempt) suspect(ctx context.Context, st stamp, cur admin.Reading, curV driver.Version) (*Lease, error) {
	now := st.wall
	a.c.loadWatch()
	seen := a.c.watch.observe(curV, a.c.s.clock.Mono())
	a.c.saveWatch()
	reason := ""
	var prev *admin.Record
	if cur.Err != nil {
		reason = cur.Err.Error()
	} else {
		reason = cur.Record.Suspicion(now)
		prev = &cur.Record
	}
	if seen < a.c.s.ttl {
		return nil, &HeldError{Status: admin.Status{Key: a.c.key, Version: curV, Record: prev, State: admin.Suspect, Reason: reason,
			TakeoverAt: now.Add(a.c.s.ttl - seen), Now: now, Service: cur.Service}}
	}
	st.previous, st.follows = prev, prev
	st.detail = fmt.Sprintf("took over a suspect lease unchanged for %v: %s", seen.Round(time.Millisecond), reason)
	return a.takeOver(ctx, st, curV, EventTookOver)
}

// takeOver writes our record over version over with If-Match and, in the
// same round trip, probes If-Match on a made-up version (which can land only
// where the real write would, so it risks nothing more).
func (a *attempt) takeOver(ctx context.Context, st stamp, over driver.Version, kind EventKind) (*Lease, error) {
	if !follows(st.follows) {
		if err := a.tick(ctx, over); err != nil {
			return nil, err
		}
	}
	if err := a.provePath(ctx); err != nil {
		return nil, err
	}
	st, err := a.epoch(a.restamp(st))
	if err != nil {
		return nil, err
	}
	type result struct {
		v   driver.Version
		err error
	}
	if err := a.shield.write(); err != nil {
		return nil, err
	}
	fake := make(chan result, 1)
	go func() {
		fa, err := a.pace.put(ctx, a.b, a.c.key, st.rec.Encode(), driver.IfMatch(objects.FakeVersion(over)), a.until(st))
		fake <- result{fa.Version, err}
	}()
	v, err := a.put(ctx, st, driver.IfMatch(over))
	a.dropScratch(ctx)
	f := <-fake
	if f.err == nil {
		return nil, a.cleanUp(ctx, st, ignoredError(a.c.key, "If-Match on a made-up version"))
	}
	if !errors.Is(f.err, driver.ErrPrecondition) {
		return nil, a.cleanUp(ctx, st, fmt.Errorf("acquire %s: probe If-Match on a made-up version: %w", a.c.key, f.err))
	}
	if err != nil {
		// Refused or unknown: see whether our write landed anyway.
		cur, curV, rerr := a.read(ctx)
		switch {
		case rerr == nil && cur.Err == nil && landed(cur.Record, st.rec, curV, over):
			v = curV
		case errors.Is(err, driver.ErrPrecondition):
			return nil, errContended
		default:
			return nil, fmt.Errorf("acquire %s: take over: %w", a.c.key, err)
		}
	}
	return a.probe(ctx, st, v, false, true, kind)
}

// probe proves the preconditions not yet proven on the lease at v
// (proveLease), cleaning up on failure, then makes the lease.
func (a *attempt) probe(ctx context.Context, st stamp, v driver.Version, ifAbsentProven, ifMatchProven bool, kind EventKind) (*Lease, error) {
	v, failure := a.proveLease(ctx, st.rec.Encode(), v, ifAbsentProven, ifMatchProven, a.until(st))
	if failure != nil {
		return nil, a.cleanUp(ctx, st, failure)
	}
	l := newLease(a.c, a.b, st, v)
	l.pace = a.pace
	l.svc = a.svc
	if a.after != nil {
		l.began = a.after.Date.Add(a.after.Resolution)
	}
	a.c.held = l
	a.c.watch, a.c.twin = suspectWatch{}, suspectWatch{}
	a.c.saveWatch()
	a.c.s.emit(Event{Kind: kind, Key: a.c.key, InstanceID: a.c.s.id, Epoch: st.rec.Epoch, Version: v, Time: st.wall, Previous: st.previous,
		Detail: st.detail, exclusion: l.Exclusion()})
	return l, nil
}

// stamp is a record of ours, written at a moment of both clocks.
type stamp struct {
	rec      admin.Record
	mono     time.Duration
	wall     time.Time
	previous *admin.Record // the record taken over, if any
	follows  *admin.Record // the record whose epoch the new one follows, if any
	seen     *admin.Record // the record read before the attempt's first write, if any
	detail   string
}

func (a *attempt) stamp() stamp {
	s := a.c.s
	mono, wall := s.clock.Mono(), s.clock.Wall()
	return stamp{
		rec: admin.Record{InstanceID: s.id, AcquiredAt: a.c.stamps.acquired(wall), RenewedAt: a.c.stamps.renewed(wall),
			TTLSeconds: int64(s.ttl / time.Second), Holder: s.holder},
		mono: mono, wall: wall,
	}
}

// restamp restamps st after a slow proof, so that the record does not
// arrive already old (fenced on arrival); still before the write that
// establishes the lease.
func (a *attempt) restamp(st stamp) stamp {
	mono, wall := a.c.s.clock.Mono(), a.c.s.clock.Wall()
	if mono == st.mono {
		return st
	}
	st.rec.RenewedAt = a.c.stamps.renewed(wall)
	st.mono, st.wall = mono, wall
	return st
}

// owns reports whether this contender provably sent rec.
func (c *Contender) owns(rec admin.Record) bool {
	return c.sent.has(rec) || (c.held != nil && c.held.sent.has(rec)) || c.journal.predecessors(rec)
}

// put sends the attempt's record through the pacer until st's fence
// deadline, remembering it first so that a later read recognises it.
func (a *attempt) put(ctx context.Context, st stamp, cond driver.Condition) (driver.Version, error) {
	if err := a.shield.write(); err != nil {
		return "", err
	}
	a.c.sent.add(st.rec)
	a.wrote = true
	pa, svc, err := admin.TimedCall(a.c.s.clock, func() (driver.Attrs, error) {
		return a.pace.put(ctx, a.b, a.c.key, st.rec.Encode(), cond, a.until(st))
	})
	if svc != nil {
		a.after = svc
	}
	return pa.Version, err
}

// until is st's fence deadline on the monotonic clock; a rate-limited write
// is not resent after it.
func (a *attempt) until(st stamp) time.Duration { return st.mono + a.c.s.ttl*2/3 }

// endHeld ends the contender's earlier lease before a new one replaces it,
// refusing while that lease may still write.
func (c *Contender) endHeld() error {
	l := c.held
	if l == nil || l.Err() != nil {
		return nil
	}
	if l.MayWrite() {
		return fmt.Errorf("acquire %s: this Contender's lease (version %s) is still held; Release it, or let it end, before acquiring again", c.key, l.lastVersion())
	}
	l.end(ErrFenced, nil, "no renewal succeeded within two thirds of the TTL")
	return nil
}

// read reads the lease object, noting the service's clock.
func (a *attempt) read(ctx context.Context) (admin.Reading, driver.Version, error) {
	cur, v, err := admin.Read(ctx, a.c.s.clock, a.b, a.c.key)
	if cur.Service != nil {
		a.svc = cur.Service
		if a.wrote {
			a.after = cur.Service
		}
	}
	return cur, v, err
}

// suspectWatch is the suspect version a contender watches and since when
// (monotonic); unchanged for one of its TTLs, it is taken over.
type suspectWatch struct {
	version driver.Version
	since   time.Duration
	seen    bool
}

// observe notes v at now and returns how long it has been seen unchanged.
func (w *suspectWatch) observe(v driver.Version, now time.Duration) time.Duration {
	if !w.seen || w.version != v {
		*w = suspectWatch{version: v, since: now, seen: true}
	}
	return now - w.since
}
