package drivertest

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/clock"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/internal/leaseseam"
	"github.com/mushroomdb/bucketlease/internal/objects"
	"github.com/mushroomdb/bucketlease/lease"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// The lease against the service's clock: a contender an hour off is refused
// with ErrClock and writes nothing; a holder going an hour ahead is fenced
// at its next renewal. The holder runs on this machine's clock, taken to be
// right. Skipped where the driver reports no service time.

// shifted is this machine's clock with an offset a check may change.
type shifted struct {
	clock.System
	d atomic.Int64
}

func (c *shifted) Wall() time.Time { return c.System.Wall().Add(time.Duration(c.d.Load())) }

// onServiceClock skips the check if the driver reports no service time,
// registers the lease object for cleanup, and returns the resolution.
func onServiceClock(ctx context.Context, s *scope) (time.Duration, error) {
	s.key("LEASE")
	k := s.key("clock-probe")
	if _, err := put(ctx, s.b, k, []byte("clock"), driver.Condition{}); err != nil {
		return 0, fmt.Errorf("Put %s: %s", k, outcome(err))
	}
	_, a, err := objects.ReadAll(ctx, s.b, k, 1<<10, driver.GetOptions{})
	if err != nil {
		return 0, fmt.Errorf("Get %s: %s", k, outcome(err))
	}
	if a.Time.Date.IsZero() {
		return 0, skipped{"the driver reports no service time (Attrs.Time.Date is zero): the lease assumes the machines' clocks synchronised"}
	}
	return a.Time.Resolution, nil
}

// clockOpts are leaseOpts on c with a TTL of ttl, or paced where the driver
// declares a KeyWriteInterval (an acquire's paced writes take about 5 s,
// which must fit before the fence).
func clockOpts(id string, c clock.Clock, caps driver.Capabilities, ttl, paced time.Duration) *lease.Options {
	o := leaseOpts(id, c, caps)
	o.TTL = ttl
	if caps.KeyWriteInterval > 0 {
		o.TTL = paced
	}
	return o
}

// leaseEpoch: a holder after a release, and one after the lease object was
// deleted, each get a greater epoch, however quickly they follow.
func leaseEpoch(ctx context.Context, s *scope) error {
	if _, err := onServiceClock(ctx, s); err != nil {
		return err
	}
	var prev uint64
	for i, how := range []string{"on a free prefix", "after a release", "after the lease object was deleted"} {
		if i == 2 {
			if err := s.b.Delete(ctx, admin.Key(s.prefix), driver.Condition{}); err != nil {
				return fmt.Errorf("deleting the lease object: %s", outcome(err))
			}
		}
		l, err := lease.Acquire(ctx, bucket.New(s.b, s.prefix), clockOpts(fmt.Sprintf("epoch-%d", i), clock.System{}, s.b.Capabilities(), 6*time.Second, 12*time.Second))
		if err != nil {
			return fmt.Errorf("acquire %s: %v", how, err)
		}
		e := l.Epoch()
		if err := l.Release(context.WithoutCancel(ctx)); err != nil {
			return fmt.Errorf("release %s: %v", how, err)
		}
		if e <= prev {
			return fmt.Errorf("the lease %s has epoch %d, not greater than the one before's %d", how, e, prev)
		}
		prev = e
	}
	return nil
}

var leaseClockChecks = []check{
	{
		applies: declaresExclusion,
		name:    "lease-epoch",
		area:    areaPut,
		expect: "on the service's clock, a lease after a release and one after the lease object was deleted each have an epoch " +
			"greater than the one before (lease.Lease.Epoch), however quickly they follow",
		run: leaseEpoch,
	},
	{
		applies: declaresExclusion,
		name:    "lease-clock-wrong-contender",
		area:    areaPut,
		expect:  "with a lease held, a contender whose clock is an hour ahead, then one an hour behind, gets ErrClock and writes nothing",
		run: func(ctx context.Context, s *scope) error {
			if _, err := onServiceClock(ctx, s); err != nil {
				return err
			}
			holder, err := lease.Acquire(ctx, bucket.New(s.b, s.prefix), clockOpts("holder", clock.System{}, s.b.Capabilities(), 6*time.Second, 12*time.Second))
			if err != nil {
				return fmt.Errorf("the holder's acquire on this machine's clock: %v", err)
			}
			defer holder.Release(context.WithoutCancel(ctx))
			for _, off := range []time.Duration{time.Hour, -time.Hour} {
				c := &shifted{}
				c.d.Store(int64(off))
				_, err := lease.Acquire(ctx, bucket.New(s.b, s.prefix), clockOpts("contender", c, s.b.Capabilities(), 6*time.Second, 12*time.Second))
				if !errors.Is(err, lease.ErrClock) {
					return fmt.Errorf("a contender %v off: %v, want ErrClock", off, err)
				}
				if err := holds(ctx, s.b, s.prefix, "holder"); err != nil {
					return fmt.Errorf("after the refused contender %v off: %v", off, err)
				}
			}
			if !holder.MayWrite() {
				return errors.New("the holder may no longer write")
			}
			return nil
		},
	},
	{
		applies: declaresExclusion,
		name:    "lease-clock-holder-fenced",
		area:    areaPut,
		expect:  "a holder (TTL 24s) whose clock runs 11s ahead is fenced at its next renewal with ErrFenced and ErrClock, and a contender on a right clock finds its record fresh, judged by the service's clock and not by its stamp",
		run: func(ctx context.Context, s *scope) error {
			if _, err := onServiceClock(ctx, s); err != nil {
				return err
			}
			c := &shifted{}
			// An 11 s step: past a third of the TTL (and a 2 s resolution),
			// short of the fence's two thirds less a paced acquire's 5 s.
			o := clockOpts("holder", c, s.b.Capabilities(), 24*time.Second, 24*time.Second)
			holder, err := lease.Acquire(ctx, bucket.New(s.b, s.prefix), o)
			if err != nil {
				return fmt.Errorf("the holder's acquire on this machine's clock: %v", err)
			}
			c.d.Store(int64(11 * time.Second))
			err = leaseseam.Renew(ctx, holder)
			if !errors.Is(err, lease.ErrFenced) || !errors.Is(err, lease.ErrClock) {
				return fmt.Errorf("the renewal 11s ahead: %v, want ErrFenced and ErrClock", err)
			}
			if holder.MayWrite() {
				return errors.New("the fenced holder may still write")
			}
			o = clockOpts("contender", clock.System{}, s.b.Capabilities(), 24*time.Second, 24*time.Second)
			var held *lease.HeldError
			if _, err := lease.Acquire(ctx, bucket.New(s.b, s.prefix), o); !errors.As(err, &held) || held.State != admin.Fresh {
				return fmt.Errorf("a contender just after the renewal stamped 11s ahead: %v, want the lease held (fresh on the service's clock)", err)
			}
			return nil
		},
	},
	{
		applies: declaresExclusion,
		name:    "lease-clock-takeover-in-time",
		area:    areaPut,
		expect:  "with clocks right, a dead holder's lease (TTL 3s, 12s where writes are paced) is taken over by a contender looking every 200ms no sooner than its TTL and within 1.5 TTL of its last renewal, plus the dates' resolution and a second for a loaded machine",
		run: func(ctx context.Context, s *scope) error {
			res, err := onServiceClock(ctx, s)
			if err != nil {
				return err
			}
			o := clockOpts("holder", clock.System{}, s.b.Capabilities(), 3*time.Second, 12*time.Second)
			sent := time.Now() // before the service stamped the acquire's last write
			if _, err := lease.Acquire(ctx, bucket.New(s.b, s.prefix), o); err != nil {
				return fmt.Errorf("the holder's acquire: %v", err)
			} // and then it dies: no renewal, no release
			o.InstanceID = "contender"
			con, err := lease.NewContender(bucket.New(s.b, s.prefix), o)
			if err != nil {
				return err
			}
			for {
				l, err := con.Acquire(ctx)
				took := time.Since(sent)
				switch {
				case err == nil:
					l.Release(context.WithoutCancel(ctx))
					if took < o.TTL-500*time.Millisecond {
						return fmt.Errorf("taken over %v after the holder's acquire was sent, before its TTL", took)
					}
					return nil
				case !errors.Is(err, lease.ErrHeld):
					return fmt.Errorf("the contender: %v", err)
				case took > o.TTL*3/2+res+time.Second:
					return fmt.Errorf("not taken over %v after the holder's acquire was sent (TTL %v, resolution %v): %v", took, o.TTL, res, err)
				}
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(200 * time.Millisecond):
				}
			}
		},
	},
}
