package drivertest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/clock"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/drivertest/faulty"
	"github.com/mushroomdb/bucketlease/internal/leaseseam"
	"github.com/mushroomdb/bucketlease/internal/objects"
	"github.com/mushroomdb/bucketlease/lease"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// The lease's own scenarios on the driver under test, with a fake clock per
// instance so a takeover costs no waiting.

const leaseTTL = 30 * time.Second

var leaseStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// leaseOpts are one instance's options: a fake clock, no log, the
// environment ignored, and BestEffort accepted where declared.
func leaseOpts(id string, c clock.Clock, caps driver.Capabilities) *lease.Options {
	getenv := func(string) string { return "" }
	if caps.Exclusion == driver.BestEffort {
		getenv = func(k string) string {
			if k == lease.EnvConditional {
				return "off"
			}
			return ""
		}
	}
	return leaseseam.With(&lease.Options{TTL: leaseTTL, InstanceID: id, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, leaseseam.Seams{Clock: c, Getenv: getenv})
}

// acquire takes the lease on the scope's prefix through b as id on clock c,
// and registers the lease object for cleanup. It uses faulty.OnFakeClocks:
// the service's clock would refuse a fake clock moved a TTL on, and pacing
// on a fake clock would never end.
func (s *scope) acquire(ctx context.Context, b driver.Bucket, id string, c clock.Clock) (*lease.Lease, error) {
	s.key("LEASE")
	return lease.Acquire(ctx, bucket.New(faulty.OnFakeClocks(b), s.prefix), leaseOpts(id, c, b.Capabilities()))
}

// declaresExclusion: the lease checks run only on a driver that declares an
// exclusion; capabilities-declared fails once for one that does not.
func declaresExclusion(c driver.Capabilities) bool { return c.Exclusion != driver.NoExclusion }

// holds fails unless the lease object names id.
func holds(ctx context.Context, b driver.Bucket, prefix, id string) error {
	data, _, err := objects.ReadAll(ctx, b, admin.Key(prefix), admin.MaxRecordSize, driver.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading the lease object: %s", outcome(err))
	}
	rec, err := admin.DecodeRecord(data)
	if err != nil {
		return fmt.Errorf("the lease object: %v", err)
	}
	if rec.InstanceID != id || rec.TTLSeconds == 0 {
		return fmt.Errorf("the lease object names %q (ttl %d), not %q", rec.InstanceID, rec.TTLSeconds, id)
	}
	return nil
}

var leaseChecks = []check{
	check{
		applies: declaresExclusion,
		name:    "lease-acquire",
		area:    areaPut,
		expect:  "a lease is acquired on a free prefix, its probe passes, and it reports the driver's exclusion",
		run: func(ctx context.Context, s *scope) error {
			l, err := s.acquire(ctx, s.b, "first", clock.NewFake(leaseStart))
			if err != nil {
				return fmt.Errorf("acquire: %v", err)
			}
			defer l.Release(ctx)
			if !l.MayWrite() {
				return errors.New("a new lease may not write")
			}
			if l.Exclusion() != s.b.Capabilities().Exclusion {
				return fmt.Errorf("the lease reports %v, the driver declares %v", l.Exclusion(), s.b.Capabilities().Exclusion)
			}
			return holds(ctx, s.b, s.prefix, "first")
		},
	},
	check{
		applies: declaresExclusion,
		name:    "lease-second-refused",
		area:    areaPut,
		expect:  "a second instance is refused with ErrHeld naming the holder",
		run: func(ctx context.Context, s *scope) error {
			c := clock.NewFake(leaseStart)
			l, err := s.acquire(ctx, s.b, "first", c)
			if err != nil {
				return fmt.Errorf("first Acquire: %v", err)
			}
			defer l.Release(ctx)
			_, err = s.acquire(ctx, s.b, "second", c)
			var he *lease.HeldError
			if !errors.As(err, &he) || he.Holder() != "first" {
				return fmt.Errorf("second Acquire: %v; want ErrHeld naming \"first\"", err)
			}
			return holds(ctx, s.b, s.prefix, "first")
		},
	},
	check{
		applies: declaresExclusion,
		name:    "lease-renew",
		area:    areaPut,
		expect:  "a renewal is one conditional write that moves the version and the fence deadline",
		run: func(ctx context.Context, s *scope) error {
			c := clock.NewFake(leaseStart)
			l, err := s.acquire(ctx, s.b, "first", c)
			if err != nil {
				return fmt.Errorf("acquire: %v", err)
			}
			defer l.Release(ctx)
			v1 := leaseseam.Inside(l).Version
			c.Advance(leaseTTL / 3)
			if err := leaseseam.Renew(ctx, l); err != nil {
				return fmt.Errorf("renew: %v", err)
			}
			if leaseseam.Inside(l).Version == v1 {
				return errors.New("the renewal did not change the version")
			}
			c.Advance(leaseTTL / 2)
			if !l.MayWrite() {
				return errors.New("the renewal did not move the fence deadline")
			}
			return holds(ctx, s.b, s.prefix, "first")
		},
	},
	check{
		applies: declaresExclusion,
		name:    "lease-takeover",
		area:    areaPut,
		expect:  "after a TTL without renewal another instance takes over, and the old holder gets ErrLost",
		run: func(ctx context.Context, s *scope) error {
			oldClock, newClock := clock.NewFake(leaseStart), clock.NewFake(leaseStart)
			old, err := s.acquire(ctx, s.b, "old", oldClock)
			if err != nil {
				return fmt.Errorf("acquire: %v", err)
			}
			oldClock.Advance(leaseTTL)
			newClock.Advance(leaseTTL)
			if old.MayWrite() {
				return errors.New("the old holder may still write a TTL after its last renewal")
			}
			nl, err := s.acquire(ctx, s.b, "new", newClock)
			if err != nil {
				return fmt.Errorf("takeover: %v", err)
			}
			defer nl.Release(ctx)
			if err := leaseseam.Renew(ctx, old); !errors.Is(err, lease.ErrLost) {
				return fmt.Errorf("the old holder's renewal: %v; want ErrLost", err)
			}
			if err := old.Release(ctx); err != nil {
				return fmt.Errorf("the old holder's release: %v", err)
			}
			return holds(ctx, s.b, s.prefix, "new")
		},
	},
	check{
		applies: declaresExclusion,
		name:    "lease-fenced-release",
		area:    areaPut,
		expect:  "a holder that stopped renewing, was taken over, and then releases leaves its successor's lease in place; a third instance is refused",
		run: func(ctx context.Context, s *scope) error {
			ac, bc, cc := clock.NewFake(leaseStart), clock.NewFake(leaseStart), clock.NewFake(leaseStart)
			a, err := s.acquire(ctx, s.b, "a", ac)
			if err != nil {
				return fmt.Errorf("acquire: %v", err)
			}
			for _, c := range []*clock.Fake{ac, bc, cc} {
				c.Advance(leaseTTL)
			}
			b, err := s.acquire(ctx, s.b, "b", bc)
			if err != nil {
				return fmt.Errorf("takeover: %v", err)
			}
			defer b.Release(ctx)
			if err := a.Release(ctx); err != nil {
				return fmt.Errorf("the fenced holder's release: %v", err)
			}
			st, err := admin.Inspect(ctx, bucket.New(faulty.OnFakeClocks(s.b), s.prefix), bc.Wall())
			if err != nil {
				return fmt.Errorf("inspect: %v", err)
			}
			if st.State != admin.Fresh || st.Holder() != "b" || st.Version != leaseseam.Inside(b).Version {
				return fmt.Errorf("after the fenced holder's release the lease is %v, held by %q at %s; want fresh, b, %s",
					st.State, st.Holder(), st.Version, leaseseam.Inside(b).Version)
			}
			if _, err := s.acquire(ctx, s.b, "c", cc); !errors.Is(err, lease.ErrHeld) {
				return fmt.Errorf("a third instance while b holds the lease: %v; want ErrHeld", err)
			}
			return nil
		},
	},
	check{
		applies: declaresExclusion,
		name:    "lease-lost-reply",
		area:    areaPut,
		expect:  "an acquire whose reply was lost is recognised as our own on the next attempt",
		run: func(ctx context.Context, s *scope) error {
			// The reply of the first If-None-Match write of the lease object
			// itself (not of the scratch key that proves the path first).
			var dropped atomic.Bool
			key := admin.Key(s.prefix)
			lossy := &faulty.LostReply{Bucket: s.b, Drop: func(op, k string, cond driver.Condition) bool {
				return op == "put" && k == key && cond == driver.IfAbsent() && dropped.CompareAndSwap(false, true)
			}}
			l, err := s.acquire(ctx, lossy, "first", clock.NewFake(leaseStart))
			if err != nil {
				return fmt.Errorf("an acquire with the first reply lost: %v", err)
			}
			defer l.Release(ctx)
			return holds(ctx, s.b, s.prefix, "first")
		},
	},
	check{
		applies: declaresExclusion,
		name:    "lease-release",
		area:    areaPut,
		expect:  "release marks the lease released (an If-Match overwrite, never a delete) and the next instance acquires at once",
		run: func(ctx context.Context, s *scope) error {
			c := clock.NewFake(leaseStart)
			l, err := s.acquire(ctx, s.b, "first", c)
			if err != nil {
				return fmt.Errorf("acquire: %v", err)
			}
			if err := l.Release(ctx); err != nil {
				return fmt.Errorf("release: %v", err)
			}
			if l.MayWrite() {
				return errors.New("a released lease may still write")
			}
			if st, err := admin.Inspect(ctx, bucket.New(faulty.OnFakeClocks(s.b), s.prefix), c.Wall()); err != nil || st.State != admin.Released {
				return fmt.Errorf("after Release the lease object is %v (%v), not a released record", st.State, err)
			}
			next, err := s.acquire(ctx, s.b, "second", c)
			if err != nil {
				return fmt.Errorf("an acquire right after release: %v", err)
			}
			return next.Release(ctx)
		},
	},
}

// leaseStamps: objects carry their lease's stamp, the next holder's greater.
func leaseStamps(ctx context.Context, s *scope) error {
	if err := s.declaresMetadata(); err != nil {
		return err
	}
	c := clock.NewFake(leaseStart)
	stampOf := func(key string) (admin.Stamp, error) {
		_, _, md, err := getMeta(ctx, s.b, key)
		switch {
		case err != nil:
			return admin.Stamp{}, fmt.Errorf("Get of %s: %s", key, outcome(err))
		case md == nil:
			return admin.Stamp{}, fmt.Errorf("Get of %s reported no metadata", key)
		}
		st, ok := admin.StampOf(md)
		if !ok {
			return st, fmt.Errorf("%s, written through Lease.Bucket, carries no stamp: its metadata is %v", key, md)
		}
		return st, nil
	}
	var prev uint64
	for i, id := range []string{"stamper-1", "stamper-2"} {
		l, err := s.acquire(ctx, s.b, id, c)
		if err != nil {
			return fmt.Errorf("acquire as %s: %v", id, err)
		}
		want := admin.Stamp{Epoch: l.Epoch(), Instance: admin.StampedInstance(l.InstanceID())}
		written, streamed := fmt.Sprintf("put-%d", i), fmt.Sprintf("streamed-%d", i)
		s.key(written)
		s.key(streamed)
		if _, err := put(ctx, l.Bucket().Driver(), written, []byte("stamped"), driver.Condition{}); err != nil {
			l.Release(ctx)
			return fmt.Errorf("Put through Lease.Bucket: %s", outcome(err))
		}
		_, err = stream(ctx, l.Bucket().Driver(), streamed, newBody(uint64(i), streamBig), driver.Condition{}, streamOpts(nil))
		l.Release(ctx)
		if err != nil && !errors.Is(err, driver.ErrUnsupported) {
			return fmt.Errorf("streamed write through Lease.Bucket: %s", outcome(err))
		}
		keys := []string{written}
		if err == nil {
			keys = append(keys, streamed)
		}
		for _, k := range keys {
			got, err := stampOf(s.prefix + "/" + k)
			if err != nil {
				return err
			}
			if got != want {
				return fmt.Errorf("%s carries the stamp %+v, the lease's is %+v", k, got, want)
			}
		}
		if want.Epoch <= prev {
			return fmt.Errorf("the lease after a release has epoch %d, not greater than the one before's %d", want.Epoch, prev)
		}
		prev = want.Epoch
	}
	return nil
}
