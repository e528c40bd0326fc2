package drivertest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/internal/objects"
)

// The service's time (obligation 15): optional, but a driver that reports
// it must report plausible times for every answered Get and Put.

// machineSkew is how far the service's clock may be from this machine's:
// loose for a slightly wrong machine, tight against an hour or a zero year.
const machineSkew = 5 * time.Minute

// maxResolution is the coarsest Resolution accepted: FAT's two seconds.
const maxResolution = 2 * time.Second

// freshness is how much earlier than its Date, beyond the resolution, a
// Get just after a write may date the object.
const freshness = 10 * time.Second

// noServiceTime is the skip message where the driver reports no time.
const noServiceTime = "no service time: the driver reports none (Attrs.Time.Date is zero; reporting it is optional, " +
	"and the lease then judges a record's age on this machine's clock alone)"

// timed is the service time of one call's Attrs, and whether the driver
// reported any (a Date that is not zero).
type timed struct {
	t        driver.ServiceTime
	reported bool
}

// timeOf returns the service time a has.
func timeOf(a driver.Attrs) timed { return timed{t: a.Time, reported: !a.Time.Date.IsZero()} }

// timedGet reads key, body and all, and returns its service time.
func timedGet(ctx context.Context, b driver.Bucket, key string) (timed, driver.Version, error) {
	rc, a, err := b.Get(ctx, key, driver.GetOptions{})
	if err != nil {
		return timeOf(a), "", err
	}
	defer rc.Close()
	_, err = io.Copy(io.Discard, rc)
	return timeOf(a), a.Version, err
}

// timedPut writes key and returns its service time.
func timedPut(ctx context.Context, b driver.Bucket, key string, data []byte, cond driver.Condition) (timed, driver.Version, error) {
	a, err := b.Put(ctx, key, data, driver.PutOptions{If: cond})
	return timeOf(a), a.Version, err
}

// plausible fails unless what's report states a Date near this machine's
// clock and a Resolution from 0 to maxResolution.
func plausible(what string, t driver.ServiceTime) error {
	if t.Resolution < 0 || t.Resolution > maxResolution {
		return fmt.Errorf("%s reported a Resolution of %v; a service's times are exact (0) or as coarse as %v at most", what, t.Resolution, maxResolution)
	}
	if off := time.Until(t.Date); off > machineSkew || off < -machineSkew {
		return fmt.Errorf("%s reported the Date %s, %v from this machine's clock: more than the %v a service's clock may be off", what,
			t.Date.UTC().Format(time.RFC3339Nano), off.Round(time.Millisecond), machineSkew)
	}
	return nil
}

// fresh fails unless a Get's modification time is no later than its Date
// (allowing the resolution) and no more than freshness before it.
func fresh(what string, t driver.ServiceTime) error {
	if err := plausible(what, t); err != nil {
		return err
	}
	if t.Modified.IsZero() {
		return fmt.Errorf("%s reported a Date but no modification time (ServiceTime.Modified): a Get's report states the object's", what)
	}
	date, mod := t.Date.UTC().Format(time.RFC3339Nano), t.Modified.UTC().Format(time.RFC3339Nano)
	if t.Modified.After(t.Date.Add(t.Resolution)) {
		return fmt.Errorf("%s reported the object modified at %s, after the answer's Date %s plus the resolution %v: "+
			"the object was written before it was read", what, mod, date, t.Resolution)
	}
	if t.Date.Sub(t.Modified) > freshness+t.Resolution {
		return fmt.Errorf("%s reported the object modified at %s, %v before the answer's Date %s, though it was written just before: "+
			"the modification time is not the latest write's", what, mod, t.Date.Sub(t.Modified), date)
	}
	return nil
}

// writtenBy fails unless get's modification time is no later than put's
// Date plus the resolution (a driver reporting the read's time fails).
func writtenBy(what string, put, get driver.ServiceTime) error {
	if !put.Date.IsZero() && get.Modified.After(put.Date.Add(max(put.Resolution, get.Resolution))) {
		return fmt.Errorf("the Get reported the object modified at %s, after %s answered at %s (resolution %v), "+
			"though nothing wrote it since: the modification time is not the write's", get.Modified.UTC().Format(time.RFC3339Nano),
			what, put.Date.UTC().Format(time.RFC3339Nano), max(put.Resolution, get.Resolution))
	}
	return nil
}

var serviceTimeChecks = []check{
	check{
		name: "service-time",
		expect: "a driver that reports the service's time (Attrs.Time) reports, for a Put, a Date near this machine's clock, " +
			"and for a Get of a fresh write a modification time no later than the Put's and the Get's Date plus the Resolution, and seconds before them; " +
			"a write made just over the Resolution later moves the modification time forward; the Resolution is 0 to 2s",
		run: func(ctx context.Context, s *scope) error {
			k := s.key("obj")
			put1, v1, err := timedPut(ctx, s.b, k, []byte("one"), driver.IfAbsent())
			if err != nil {
				return fmt.Errorf("setup: Put IfAbsent on a new key: %s", outcome(err))
			}
			get1, _, err := timedGet(ctx, s.b, k)
			if err != nil {
				return fmt.Errorf("Get of the write just made: %s", outcome(err))
			}
			switch {
			case !put1.reported && !get1.reported:
				return skipped{noServiceTime}
			case !put1.reported:
				return errors.New("the driver reported the service's time for a Get but not for a Put that succeeded: it reports for every Get and Put that got an answer")
			case !get1.reported:
				return errors.New("the driver reported the service's time for a Put but not for a Get that succeeded: it reports for every Get and Put that got an answer")
			}
			if err := plausible("the Put", put1.t); err != nil {
				return err
			}
			if err := fresh("the Get of a write just made", get1.t); err != nil {
				return err
			}
			if err := writtenBy("the Put", put1.t, get1.t); err != nil {
				return err
			}
			if get1.t.Date.Add(get1.t.Resolution + time.Second).Before(put1.t.Date) {
				return fmt.Errorf("the Get's Date %s is before the Date %s of the Put it followed",
					get1.t.Date.UTC().Format(time.RFC3339Nano), put1.t.Date.UTC().Format(time.RFC3339Nano))
			}
			// A reading is at most Resolution early, so the second Modified plus
			// Resolution is at least the first plus pause.
			res := max(get1.t.Resolution, put1.t.Resolution)
			pause := min(res+100*time.Millisecond, 1100*time.Millisecond)
			select {
			case <-time.After(pause):
			case <-ctx.Done():
				return ctx.Err()
			}
			put2, _, err := timedPut(ctx, s.b, k, []byte("two"), driver.IfMatch(v1))
			if err != nil {
				return fmt.Errorf("setup: Put IfMatch(current): %s", outcome(err))
			}
			if !put2.reported {
				return errors.New("the driver reported no service time for the second Put, an IfMatch overwrite that succeeded")
			}
			get2, _, err := timedGet(ctx, s.b, k)
			if err != nil {
				return fmt.Errorf("Get of the second write: %s", outcome(err))
			}
			if !get2.reported {
				return errors.New("the driver reported no service time for the Get of the second write")
			}
			if err := fresh("the Get of the second write", get2.t); err != nil {
				return err
			}
			if err := writtenBy("the second Put", put2.t, get2.t); err != nil {
				return err
			}
			if get2.t.Modified.Add(res).Before(get1.t.Modified.Add(pause)) {
				return fmt.Errorf("a write made %v after the first (Resolution %v) reads as modified at %s, the first at %s: "+
					"the modification time did not move forward with the latest write", pause, res,
					get2.t.Modified.UTC().Format(time.RFC3339Nano), get1.t.Modified.UTC().Format(time.RFC3339Nano))
			}
			return nil
		},
	},
	check{
		name: "service-time-refused",
		expect: "a driver that reports the service's time reports a Date for a Get of a missing key and for a Put refused " +
			"under IfAbsent and under IfMatch, as for a success",
		run: func(ctx context.Context, s *scope) error {
			k := s.key("obj")
			put, v, err := timedPut(ctx, s.b, k, []byte("one"), driver.IfAbsent())
			if err != nil {
				return fmt.Errorf("setup: Put IfAbsent on a new key: %s", outcome(err))
			}
			missing, _, merr := timedGet(ctx, s.b, s.key("missing"))
			if !put.reported && !missing.reported {
				return skipped{noServiceTime}
			}
			if !errors.Is(merr, driver.ErrNotExist) {
				return fmt.Errorf("Get of a missing key: %s", outcome(merr))
			}
			absent, _, aerr := timedPut(ctx, s.b, k, []byte("two"), driver.IfAbsent())
			if !errors.Is(aerr, driver.ErrPrecondition) {
				return fmt.Errorf("Put IfAbsent on an existing key: %s", outcome(aerr))
			}
			stale, _, serr := timedPut(ctx, s.b, k, []byte("two"), driver.IfMatch(objects.FakeVersion(v)))
			if !errors.Is(serr, driver.ErrPrecondition) {
				return fmt.Errorf("Put IfMatch of a made-up version: %s", outcome(serr))
			}
			for _, c := range []struct {
				what string
				t    timed
			}{
				{"a Put that succeeded", put},
				{"a Get of a missing key (ErrNotExist)", missing},
				{"a Put refused under IfAbsent (ErrPrecondition)", absent},
				{"a Put refused under IfMatch (ErrPrecondition)", stale},
			} {
				if !c.t.reported {
					return fmt.Errorf("the driver reported no service time for %s, though it reports for others: "+
						"it reports for every Get and Put that got an answer, a refusal or a missing key included", c.what)
				}
				if err := plausible(c.what, c.t.t); err != nil {
					return err
				}
			}
			return nil
		},
	},
}
