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

// epochTick is the least the service's clock must move on before an epoch
// following no earlier one is taken from it, where its time is exact (mem):
// more than the epochs a chain of takeovers can add meanwhile.
const epochTick = time.Millisecond

// maxTickReads bounds the reads waiting for the service's clock to move.
const maxTickReads = 8

// epochAt is the microseconds since 1970 of t + res, which the true time of
// a reading at resolution res has not reached.
func epochAt(t time.Time, res time.Duration) uint64 {
	us := t.Add(res).UnixMicro()
	return uint64(min(max(us, 1), admin.MaxEpoch))
}

// follows reports whether a new epoch can follow prev's; otherwise it comes
// from the clock alone, after tick.
func follows(prev *admin.Record) bool { return prev != nil && prev.Epoch > 0 }

// nextEpoch is one more than prev's epoch, or the clock's floor if greater.
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

// epoch sets st's epoch from the service's clock of the latest read (or
// this machine's where none is reported).
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

// settleEpoch gives create's epoch-less record at v its epoch, carried by
// the probe's If-Match write. It is taken after tick, past our write's
// answer, so it exceeds every epoch that landed before ours, even across
// deletes; one taken before the create's write would not (another holder may
// come, go and be deleted meanwhile).
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

// tick waits until the service's clock reads at least one resolution (and
// epochTick) past the attempt's latest answer, re-reading the lease object.
// Every earlier epoch came from a Date no later than that answer plus a
// resolution (and one per takeover), so one taken now is greater, across any
// deletes, while the service's clock does not go back. A takeover is guarded
// by If-Match meanwhile; a create is not, so it settles its epoch after its
// write. A change of version is errContended. Without the service's time it
// returns at once, and epochs order holders across a delete only as far as
// their clocks agree.
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
