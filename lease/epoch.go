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

// epochTick is how far the service's clock must move on, at the least,
// before an epoch that follows no earlier one is taken from it, on a
// service that states its time exactly (mem): more than the most epochs a
// chain of takeovers can add in that time, one per takeover, since each
// takeover is at least a read and a write.
const epochTick = time.Millisecond

// maxTickReads bounds how often an acquire reads the lease object again
// waiting for the service's clock to move on: a service whose Date stands
// still is not a clock to take an epoch from.
const maxTickReads = 8

// epochAt is the epoch floor at time t of a clock read at resolution res:
// the microseconds since 1970 of t + res, which the true time of the
// reading has not reached.
func epochAt(t time.Time, res time.Duration) uint64 {
	us := t.Add(res).UnixMicro()
	return uint64(min(max(us, 1), admin.MaxEpoch))
}

// follows reports whether a new epoch can follow prev's: prev is a record
// with an epoch. Otherwise (a free key, an object that is not a record, a
// record of a writer that keeps no epoch) the chain is broken and the new
// epoch comes from the clock alone, after it has moved on (tick).
func follows(prev *admin.Record) bool { return prev != nil && prev.Epoch > 0 }

// nextEpoch returns the epoch of a new holder whose record follows prev
// (nil if none), taken at time t of a clock read at resolution res: one
// more than prev's, or the clock's floor if that is greater.
func nextEpoch(prev *admin.Record, t time.Time, res time.Duration) (uint64, error) {
	e := epochAt(t, res)
	if follows(prev) && prev.Epoch >= e {
		if prev.Epoch >= admin.MaxEpoch {
			return 0, fmt.Errorf("the lease object's epoch %d is the largest a record carries, so no holder can follow it; "+
				"a record this far ahead was not written by this package's clock: delete the lease object once no holder is writing", prev.Epoch)
		}
		e = prev.Epoch + 1
	}
	return e, nil
}

// epoch sets st's epoch, following st.follows, from the service's clock of
// the attempt's latest read, or from this machine's where the driver
// reports none.
func (a *attempt) epoch(st stamp) (stamp, error) {
	t, res := st.wall, time.Duration(0)
	if a.svc != nil {
		t, res = a.svc.Date, a.svc.Resolution
	}
	e, err := nextEpoch(st.follows, t, res)
	if err != nil {
		return st, fmt.Errorf("acquire %s: %w", a.c.key, err)
	}
	st.rec.Epoch = e
	st.rec.Before = admin.Remembered(st.follows, a.svc)
	return st, nil
}

// settleEpoch gives the record that create wrote, at version v and
// without an epoch, its epoch, before the lease is made: the probes that
// follow a create write the record once more with If-Match on v (to show
// that the service accepts the current version), and that write carries
// it. Every epoch whose record landed before ours was taken from the
// service's clock no later than that landing (plus a resolution, and one
// per takeover in between); ours is taken from the service's clock after
// it has moved on past our write's answer (tick), so it is greater than
// all of them, however many deletes of the lease object came between, and
// whatever landed while our write was in flight. An epoch written in the
// first write, taken from a read before it, would not be: another holder
// may have come, gone and been deleted while that write was on its way
// (the simulator found it, seed 19632).
func (a *attempt) settleEpoch(ctx context.Context, created stamp, v driver.Version, ifAbsentProven bool) (*Lease, error) {
	if err := a.tick(ctx, v); err != nil {
		return nil, err
	}
	st := created
	st.follows = &created.rec
	st, err := a.epoch(a.restamp(st))
	if err != nil {
		return nil, err
	}
	a.c.sent.add(st.rec)
	return a.probe(ctx, st, v, ifAbsentProven, false, EventAcquired)
}

// errClockStill is why an acquire gave up waiting for the service's clock
// to move on.
var errClockStill = errors.New("the service's clock did not move on")

// tick waits, before an epoch is taken from the clock alone, until the
// service's clock reads at least one resolution (and epochTick) past the
// latest answer the attempt has had (a read, or its own write's), reading
// the lease object again to learn its time. Every epoch whose record
// landed before that answer was taken from the service's clock no later
// than its Date plus one resolution, plus one per takeover in between, so
// an epoch taken from a Date past it is greater than all of them, however
// many deletes of the lease object came in between, as long as the
// service's clock does not go back. Where the object held a record at the
// read (a takeover), If-Match keeps anything from landing between that
// read and our write; a create has no such guard, so its epoch is settled
// after its write (settleEpoch). An object that changed while it waited
// (it is no longer at version v) is errContended: it is judged afresh.
//
// Without the service's time there is nothing to wait for: an epoch
// that follows no earlier one then comes from this machine's clock, and
// orders holders across a delete only as far as their clocks agree.
func (a *attempt) tick(ctx context.Context, v driver.Version) error {
	last := a.svc
	if a.after != nil && (last == nil || a.after.Date.After(last.Date)) {
		last = a.after // the answer to our own write, later than any read
	}
	if last == nil {
		return nil
	}
	start := last.Date
	target := start.Add(max(last.Resolution, epochTick))
	for range maxTickReads {
		if err := clock.Sleep(ctx, a.c.s.clock, target.Sub(last.Date)); err != nil {
			return fmt.Errorf("acquire %s: %w", a.c.key, err)
		}
		_, curV, err := a.read(ctx)
		switch {
		case errors.Is(err, driver.ErrNotExist), err == nil && curV != v:
			return errContended
		case err != nil:
			return fmt.Errorf("acquire %s: read the lease object: %w", a.c.key, err)
		}
		if a.svc != nil && a.svc.Date.After(last.Date) {
			last = a.svc
		}
		if !last.Date.Before(target) {
			return nil
		}
	}
	return fmt.Errorf("acquire %s: %w: %w: it read %s at every one of %d reads over %v; an epoch cannot be taken from it",
		a.c.key, ErrClock, errClockStill, start.UTC().Format(time.RFC3339Nano), maxTickReads+1, time.Duration(maxTickReads)*max(last.Resolution, epochTick))
}
