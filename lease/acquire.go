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

// try makes one attempt to take the lease. It writes the lease with
// If-None-Match: * on a free key, or with If-Match over a stale, released
// or long-suspect record, or over a record of its own instance id. It then
// probes the service: the lease is written once more with If-None-Match: *
// and once with If-Match on a made-up version, and both must be refused.
//
// It returns a *HeldError (errors.Is(err, ErrHeld)) when another instance
// holds the lease, and an error wrapping ErrPreconditionsIgnored, leaving
// no lease of ours behind, when the service accepts a write it should have
// refused. When ctx ends after the attempt has written the lease object,
// it finishes the attempt (for up to ten seconds more) and releases what it
// made before it returns ctx's error, saying so.
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
	c *Contender
	b driver.Bucket
	// proven: this Acquire has shown, on a scratch key, that the path
	// applies both preconditions (provePath).
	proven bool
	// scratch is the proof's scratch key, until its delete starts
	// (dropScratch); deletes yield the outcome of the deletes started.
	scratch string
	deletes []<-chan error
	// svc is what the latest read of the lease object said about the
	// service's clock; nil when the driver reports none.
	svc *admin.ServiceClock
	// shield keeps the attempt going past its caller's cancellation once
	// it has written the lease object (interrupt.go).
	shield shield
	// cleaned: cleanUp has run; what it left is said in its error.
	cleaned bool
	// wrote: a write of the lease object has been sent; after is the
	// service's clock of the latest answer to it or to a request sent
	// after it (nil if none came): the lease began no later than that
	// answer's Date plus its resolution.
	wrote bool
	after *admin.ServiceClock
	// pace spaces the attempt's writes to one key where the driver
	// declares a KeyWriteInterval, and sends a rate-limited write again;
	// the lease it makes keeps it.
	pace *pacer
}

// run is one pass of the algorithm of Acquire (see docs/promises.md, "How it keeps them"). It
// checks that the contender may stamp a record at all (its wall clock is
// sane and not stepped back, and no failed acquire of its own blocks the
// prefix), reads the lease object, and then creates it if the key is free
// (create), or judges the record it holds (judge). Every write that would
// establish the lease goes out only once the path is proven on a scratch
// key (provePath), and is followed by the probes on the lease object
// itself (probe).
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
	// Read first: nothing is written over a record before it has been
	// read and judged, so that on a path that drops the precondition (a
	// proxy, a gateway, an old client) a refused acquire writes nothing
	// over a live holder. Only a free key is written blind, with
	// If-None-Match: *.
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

// create writes our record, with If-None-Match: *, to the lease object
// that was free when read, once the path is proven: a record without an
// epoch, which settleEpoch then gives one. A refusal shows that someone
// created the key since the read (and that If-None-Match: * is enforced);
// after any other error the write may or may not have landed. Either way
// the object is read again.
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
	case cur.Err == nil && cur.Record.Same(st.rec):
		// This very write landed; its reply was lost or a retry of it
		// was refused. Adopt it.
		return a.settleEpoch(ctx, st, curV, ifAbsentProven)
	case ifAbsentProven:
		return nil, errContended // another instance created it: judge it afresh
	}
	// Our write's outcome is unknown and the object holds something else:
	// judge it as if it had been there when we read.
	return a.judge(ctx, st, cur, curV)
}

// judge decides what to do with the lease object read at version curV. A
// record this contender wrote is taken back (reacquire). A fresh record
// naming our id that it did not write is another process's (twin). A stale
// or released record is taken over; a fresh one of another instance holds
// the lease (ErrHeld). A suspect record, or an object that is not a record,
// is taken over once seen unchanged for one of our TTLs (suspect).
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

// reacquire takes back rec, at version v, which this contender wrote
// before: an earlier attempt whose reply was lost, or its earlier lease,
// which must be over first; or, with a state directory, what this
// instance's previous process left when it died.
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

// twin handles a fresh record that names our instance id but that this
// contender did not write: a restart of this instance (its previous
// process left the record), or another live process configured with the
// same id. Such a record is not ours: it is taken over like anyone else's,
// once it is stale, a TTL after its last renewal by our clock. (Taking it
// back earlier is not safe: a writer whose monotonic clock stood still
// while its machine was suspended fences itself by its wall clock alone,
// which may lag ours by the skew the spec allows, so only the record's own
// age bounds when it stopped.) A change while we watch it means a live
// process is renewing it: ErrInstanceInUse.
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

// suspect takes over a suspect record, or an object that is not a record,
// only after one of our TTLs unchanged, timed from when each read's answer
// arrived, which is never earlier than when the object was seen.
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
// same round trip, probes If-Match with a made-up version (the made-up write
// can only land where the real one would too, so it risks nothing more).
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

// probe checks, after we hold the lease at version v, that the service
// refuses the preconditions not yet proven (proveLease); if it does not,
// the clean-up leaves the prefix blocked. It then makes the lease.
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

// restamp renews st's renewed_at and clocks once the path has been proven,
// if time has passed since st was taken: the proof's requests may take
// seconds on a slow service, and a record stamped before them would reach
// the lease object already old (and the lease be fenced on arrival, for a
// successor to take over at once). The fence is timed from the new stamp,
// which is still taken before the write that establishes the lease.
func (a *attempt) restamp(st stamp) stamp {
	mono, wall := a.c.s.clock.Mono(), a.c.s.clock.Wall()
	if mono == st.mono {
		return st
	}
	st.rec.RenewedAt = a.c.stamps.renewed(wall)
	st.mono, st.wall = mono, wall
	return st
}

// owns reports whether the contender provably wrote rec: one of its
// attempts, or its latest lease, sent exactly this record.
func (c *Contender) owns(rec admin.Record) bool {
	return c.sent.has(rec) || (c.held != nil && c.held.sent.has(rec)) || c.journal.predecessors(rec)
}

// put sends one write of the attempt's record, remembering it first: its
// outcome may stay unknown, and a later read must recognise it as ours.
// It goes through the attempt's pacer, until st's fence deadline.
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

// until is the fence deadline of a lease stamped st, on the monotonic
// clock: a write of st's record that starts later would make a lease
// fenced on arrival, so a rate-limited one is not sent again after it.
func (a *attempt) until(st stamp) time.Duration { return st.mono + a.c.s.ttl*2/3 }

// endHeld ends the contender's earlier lease before a new one replaces it.
// A lease that may still write is not ended behind its holder's back: that
// is a second Acquire on one Contender while its lease is held.
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

// read reads the lease object. A missing object is driver.ErrNotExist; an
// object that is not a valid record is a readResult with err set.
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
