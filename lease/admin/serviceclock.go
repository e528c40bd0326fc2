package admin

import (
	"fmt"
	"time"

	"github.com/mushroomdb/bucketlease/clock"
	"github.com/mushroomdb/bucketlease/driver"
)

// ServiceClock is what one answer said about the service's clock and what
// that shows of this machine's. Every party shares the service's clock, so a
// record's age on it (Date − Modified) is the same whatever machines say.
type ServiceClock struct {
	// Date is the service's time of its answer.
	Date time.Time
	// Modified is the lease object's modification time on the service's
	// clock; zero after a write, or for a free key.
	Modified time.Time
	// Resolution is how much earlier than the true time Date and Modified
	// may read (HTTP dates are whole seconds).
	Resolution time.Duration
	// Offset is this machine's wall clock minus the service's; the true
	// offset lies within Offset ± Uncertainty.
	Offset, Uncertainty time.Duration

	local time.Time // this machine's clock when the answer came
}

// newServiceClock times t, an answer to a request sent at local time sent
// and answered at recv: the service answered in [Date, Date+Resolution),
// while this clock read between sent and recv.
func newServiceClock(t driver.ServiceTime, sent, recv time.Time) *ServiceClock {
	lo := sent.Sub(t.Date.Add(t.Resolution))
	hi := recv.Sub(t.Date)
	if hi < lo { // a wall clock stepped back during the call
		lo, hi = hi, lo
	}
	return &ServiceClock{Date: t.Date, Modified: t.Modified, Resolution: t.Resolution,
		Offset: lo + (hi-lo)/2, Uncertainty: (hi - lo) / 2, local: recv}
}

// String says how far this machine's clock is from the service's.
func (c ServiceClock) String() string {
	unc := c.Uncertainty.Round(time.Millisecond)
	if c.Offset <= c.Uncertainty && c.Offset >= -c.Uncertainty {
		return fmt.Sprintf("this machine's clock agrees with the service's to within %v", unc)
	}
	return fmt.Sprintf("this machine's clock is %s the service's, give or take %v", describeOffset(c.Offset), unc)
}

// describeOffset says "1h0m2s ahead of", "3s behind" or "within 1ms of".
func describeOffset(d time.Duration) string {
	switch r := d.Round(time.Millisecond); {
	case r > 0:
		return r.String() + " ahead of"
	case r < 0:
		return (-r).String() + " behind"
	default:
		return "within 1ms of"
	}
}

// OffsetProblem says why this machine's clock is not to be trusted with a
// lease of ttl: it is provably more than a third of a TTL off the service's.
// It is "" otherwise, or for a nil c.
func (c *ServiceClock) OffsetProblem(ttl time.Duration) string {
	if c == nil {
		return ""
	}
	least := c.Offset - c.Uncertainty
	if c.Offset < 0 {
		least = -(c.Offset + c.Uncertainty)
	}
	if least <= ttl/3 {
		return ""
	}
	local := c.local
	return fmt.Sprintf("this machine's clock is %s the service's: it read about %s when the service's answer said %s, more than the third of a TTL (%v) that clocks may differ by; fix the machine's clock (NTP)",
		describeOffset(c.Offset), local.UTC().Format(time.RFC3339), c.Date.UTC().Format(time.RFC3339), ttl/3)
}

// TimedCall runs call, timed on clk's wall clock, and returns the
// ServiceClock of its answer (error answers too); nil for a zero Date.
func TimedCall(clk clock.Clock, call func() (driver.Attrs, error)) (driver.Attrs, *ServiceClock, error) {
	sent := clk.Wall()
	a, err := call()
	recv := clk.Wall()
	if a.Time.Date.IsZero() {
		return a, nil, err
	}
	return a, newServiceClock(a.Time, sent, recv), err
}

// Judge classifies r, read in an answer that said svc, at the reader's time
// now, and says when it could be taken over (zero for Suspect). Without the
// service's clock it is StateAt. With it, r is stale only if stale by the
// reader's clock and on the service's (Date − Modified ≥ TTL + Resolution).
// No further margin is needed: the holder stopped writing two thirds of a TTL
// after sending the renewal the service stamped on arrival, so the last third
// covers the service's clock and a slow monotonic clock. A stamp more than a
// third of a TTL (plus resolution) ahead of Modified is not trusted: the
// service's clock alone decides. Released records and TTLs over MaxSaneTTL
// are judged as StateAt judges them.
func Judge(r Record, now time.Time, svc *ServiceClock) (State, time.Time) {
	state := r.StateAt(now)
	machineAt := r.RenewedAt.Add(r.TTL())
	if svc == nil || svc.Modified.IsZero() || state == Released || r.TTL() > MaxSaneTTL {
		switch state {
		case Fresh:
			return Fresh, machineAt
		case Suspect:
			return Suspect, time.Time{}
		}
		return state, now
	}
	need := r.TTL() + svc.Resolution
	age := svc.Date.Sub(svc.Modified)
	serviceAt := now.Add(need - age)
	serviceStale := age >= need
	if r.RenewedAt.Sub(svc.Modified) > r.TTL()/3+svc.Resolution {
		state = Stale // the stamp is not trusted: the service's clock decides
	}
	switch {
	case state == Stale && serviceStale:
		return Stale, now
	case state == Stale:
		return Fresh, serviceAt
	case state == Fresh:
		return Fresh, later(machineAt, serviceAt)
	}
	return Suspect, time.Time{}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
