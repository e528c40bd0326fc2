package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
)

// A Contender tries to take the lease on one prefix for one instance. It
// keeps the instance id and what it has seen of a suspect foreign record
// (its Watch) across attempts, so use one Contender for all of an
// instance's attempts. A Contender is not safe for concurrent Acquire calls.
type Contender struct {
	bucket driver.Bucket
	prefix string
	key    string
	s      *settings
	watch  Watch
}

// Watch is what a contender has seen of a suspect foreign lease across
// attempts: which version, and since when on its own monotonic clock. A
// suspect record seen unchanged for one of the contender's TTLs is taken
// over.
type Watch struct {
	version driver.Version
	since   time.Duration
	seen    bool
}

// Version returns the suspect version being watched, or "".
func (w *Watch) Version() driver.Version { return w.version }

// Since returns when, on the contender's monotonic clock, the watched
// version was first seen, and whether one is being watched.
func (w *Watch) Since() (time.Duration, bool) { return w.since, w.seen }

// observe records that version v is suspect at monotonic time now and
// returns how long it has been seen unchanged.
func (w *Watch) observe(v driver.Version, now time.Duration) time.Duration {
	if !w.seen || w.version != v {
		*w = Watch{version: v, since: now, seen: true}
	}
	return now - w.since
}

// NewContender returns a contender for the lease on prefix in b.
func NewContender(b driver.Bucket, prefix string, opts *Options) (*Contender, error) {
	s, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	return &Contender{bucket: b, prefix: prefix, key: Key(prefix), s: s}, nil
}

// InstanceID returns the contender's instance id.
func (c *Contender) InstanceID() string { return c.s.id }

// Key returns the key of the lease object.
func (c *Contender) Key() string { return c.key }

// Watch returns what the contender has seen of a suspect record.
func (c *Contender) Watch() Watch { return c.watch }

// Acquire takes the lease on prefix in b for a new instance; it is
// NewContender followed by one Acquire. Use a Contender to retry with the
// same instance id.
func Acquire(ctx context.Context, b driver.Bucket, prefix string, opts *Options) (*Lease, error) {
	c, err := NewContender(b, prefix, opts)
	if err != nil {
		return nil, err
	}
	return c.Acquire(ctx)
}

// maxContention bounds how often one Acquire starts over when the object
// changes between its read and its write.
const maxContention = 3

// Acquire makes one attempt to take the lease. It writes the lease with
// If-None-Match: * on a free key, or with If-Match over a stale, released
// or long-suspect record, or over a record of its own instance id. It then
// probes the service: the lease is written once more with If-None-Match: *
// and once with If-Match on a made-up version, and both must be refused.
//
// It returns a *HeldError (errors.Is(err, ErrHeld)) when another instance
// holds the lease, and an error wrapping ErrPreconditionsIgnored, leaving
// no lease of ours behind, when the service accepts a write it should have
// refused.
func (c *Contender) Acquire(ctx context.Context) (*Lease, error) {
	b, err := c.s.bucketFor(c.bucket, c.key)
	if err != nil {
		return nil, err
	}
	a := &attempt{c: c, b: b}
	for range maxContention {
		l, err := a.run(ctx)
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
}

// stamp is a record of ours, written at a moment of both clocks.
type stamp struct {
	rec      Record
	mono     time.Duration
	wall     time.Time
	previous *Record // the record taken over, if any
	detail   string
}

func (a *attempt) stamp(acquiredAt time.Time) stamp {
	s := a.c.s
	mono, wall := s.clock.Mono(), s.clock.Wall()
	if acquiredAt.IsZero() {
		acquiredAt = wall
	}
	return stamp{
		rec:  Record{InstanceID: s.id, AcquiredAt: acquiredAt, RenewedAt: wall, TTLSeconds: int64(s.ttl / time.Second)},
		mono: mono, wall: wall,
	}
}

func (a *attempt) run(ctx context.Context) (*Lease, error) {
	key := a.c.key
	st := a.stamp(time.Time{})
	if err := checkWall(st.wall); err != nil {
		return nil, err
	}
	v, err := a.b.Put(ctx, key, st.rec.Encode(), driver.IfAbsent())
	if err == nil {
		return a.probe(ctx, st, v, false, false, EventAcquired)
	}
	// Refused: the key exists, which also shows that IfAbsent is enforced.
	// Any other error: the write may or may not have landed.
	ifAbsentProven := errors.Is(err, driver.ErrPrecondition)
	cur, curV, rerr := a.read(ctx)
	switch {
	case errors.Is(rerr, driver.ErrNotExist):
		if ifAbsentProven {
			return nil, errContended // deleted since our write was refused
		}
		return nil, fmt.Errorf("acquire %s: %w", key, err)
	case rerr != nil:
		return nil, fmt.Errorf("acquire %s: read the lease after the write failed (%v): %w", key, err, rerr)
	}
	if cur.err == nil && cur.rec.InstanceID == a.c.s.id {
		if cur.rec.RenewedAt.Equal(st.rec.RenewedAt) {
			// Our own write landed; its reply was lost or a retry of it
			// was refused. Adopt it.
			return a.probe(ctx, st, curV, ifAbsentProven, false, EventAcquired)
		}
		// A lease of ours from before (a restart): take it back at once.
		st = a.stamp(cur.rec.AcquiredAt)
		st.detail = "re-acquired a lease this instance held before"
		return a.takeOver(ctx, st, curV, ifAbsentProven, EventAcquired)
	}
	now := st.wall
	state := Suspect
	if cur.err == nil {
		state = cur.rec.StateAt(now)
	}
	switch state {
	case Stale, Released:
		st.previous = &cur.rec
		st.detail = fmt.Sprintf("took over a %s lease of instance %s", state, cur.rec.InstanceID)
		return a.takeOver(ctx, st, curV, ifAbsentProven, EventTookOver)
	case Fresh:
		return nil, &HeldError{Key: key, Version: curV, Record: &cur.rec, State: Fresh,
			TakeoverAt: cur.rec.RenewedAt.Add(cur.rec.TTL()), Now: now}
	}
	// Suspect: take over only after one of our TTLs unchanged, timed from
	// when each read's answer arrived, which is never earlier than when
	// the object was seen.
	seen := a.c.watch.observe(curV, a.c.s.clock.Mono())
	reason := ""
	var prev *Record
	if cur.err != nil {
		reason = cur.err.Error()
	} else {
		reason = cur.rec.suspicion(now)
		prev = &cur.rec
	}
	if seen < a.c.s.ttl {
		return nil, &HeldError{Key: key, Version: curV, Record: prev, State: Suspect, Reason: reason,
			TakeoverAt: now.Add(a.c.s.ttl - seen), Now: now}
	}
	st.previous = prev
	st.detail = fmt.Sprintf("took over a suspect lease unchanged for %v: %s", seen.Round(time.Millisecond), reason)
	return a.takeOver(ctx, st, curV, ifAbsentProven, EventTookOver)
}

// readResult is a LEASE object read back: the record, or why it is not one.
type readResult struct {
	rec Record
	err error // ErrMalformed or ErrTooLarge: not a record
}

// read reads the lease object. A missing object is driver.ErrNotExist; an
// object that is not a valid record is a readResult with err set.
func (a *attempt) read(ctx context.Context) (readResult, driver.Version, error) {
	return readLease(ctx, a.b, a.c.key)
}

func readLease(ctx context.Context, b driver.Bucket, key string) (readResult, driver.Version, error) {
	data, v, err := driver.ReadAll(ctx, b, key, MaxRecordSize)
	if errors.Is(err, driver.ErrTooLarge) {
		return readResult{err: fmt.Errorf("%w: the object is larger than %d bytes", ErrMalformed, MaxRecordSize)}, v, nil
	}
	if err != nil {
		return readResult{}, "", err
	}
	rec, derr := DecodeRecord(data)
	return readResult{rec: rec, err: derr}, v, nil
}

// takeOver writes our record over version over with If-Match and, in the
// same round trip, probes If-Match with a made-up version (the made-up write
// can only land where the real one would too, so it risks nothing more).
func (a *attempt) takeOver(ctx context.Context, st stamp, over driver.Version, ifAbsentProven bool, kind EventKind) (*Lease, error) {
	data := st.rec.Encode()
	type result struct {
		v   driver.Version
		err error
	}
	fake := make(chan result, 1)
	go func() {
		v, err := a.b.Put(ctx, a.c.key, data, driver.IfMatch(driver.FakeVersion(over)))
		fake <- result{v, err}
	}()
	v, err := a.b.Put(ctx, a.c.key, data, driver.IfMatch(over))
	f := <-fake
	if f.err == nil {
		return nil, a.failClosed(ctx, "If-Match on a made-up version")
	}
	if !errors.Is(f.err, driver.ErrPrecondition) {
		a.cleanUp(ctx)
		return nil, fmt.Errorf("acquire %s: probe If-Match on a made-up version: %w", a.c.key, f.err)
	}
	if err != nil {
		// Refused or unknown: see whether our write landed anyway.
		cur, curV, rerr := a.read(ctx)
		if rerr == nil && cur.err == nil && cur.rec.InstanceID == a.c.s.id && cur.rec.RenewedAt.Equal(st.rec.RenewedAt) {
			v = curV
		} else if errors.Is(err, driver.ErrPrecondition) {
			return nil, errContended
		} else {
			return nil, fmt.Errorf("acquire %s: take over: %w", a.c.key, err)
		}
	}
	return a.probe(ctx, st, v, ifAbsentProven, true, kind)
}

// probe checks, after we hold the lease at version v, that the service
// refuses the preconditions not yet proven, sending the probes together.
func (a *attempt) probe(ctx context.Context, st stamp, v driver.Version, ifAbsentProven, ifMatchProven bool, kind EventKind) (*Lease, error) {
	data := st.rec.Encode()
	type probe struct {
		name string
		cond driver.Condition
		err  chan error
	}
	var probes []probe
	if !ifAbsentProven {
		probes = append(probes, probe{"If-None-Match: *", driver.IfAbsent(), make(chan error, 1)})
	}
	if !ifMatchProven {
		probes = append(probes, probe{"If-Match on a made-up version", driver.IfMatch(driver.FakeVersion(v)), make(chan error, 1)})
	}
	for _, p := range probes {
		go func() {
			_, err := a.b.Put(ctx, a.c.key, data, p.cond)
			p.err <- err
		}()
	}
	var failure error
	for _, p := range probes {
		err := <-p.err
		switch {
		case failure != nil:
		case err == nil:
			failure = ignoredError(a.c.key, p.name)
		case !errors.Is(err, driver.ErrPrecondition):
			failure = fmt.Errorf("acquire %s: probe %s: %w", a.c.key, p.name, err)
		}
	}
	if failure != nil {
		a.cleanUp(ctx)
		return nil, failure
	}
	l := newLease(a.c, a.b, st, v)
	a.c.watch = Watch{}
	a.c.s.emit(Event{Kind: kind, Key: a.c.key, InstanceID: a.c.s.id, Version: v, Time: st.wall, Previous: st.previous,
		Detail: st.detail, Exclusion: l.Exclusion()})
	return l, nil
}

// failClosed removes our lease after the service accepted a probe.
func (a *attempt) failClosed(ctx context.Context, which string) error {
	a.cleanUp(ctx)
	return ignoredError(a.c.key, which)
}

// cleanUp removes a lease of ours that a failed acquire left behind: it
// reads the object and, if it names us, releases that version.
func (a *attempt) cleanUp(ctx context.Context) {
	cur, v, err := a.read(ctx)
	if err != nil || cur.err != nil || cur.rec.InstanceID != a.c.s.id {
		return
	}
	_ = release(ctx, a.b, a.c.key, v, cur.rec, a.c.s.clock.Wall())
}
