package admin

import (
	"fmt"
	"time"

	"github.com/mushroomdb/bucketlease/clock"
	"github.com/mushroomdb/bucketlease/driver"
)

// ServiceClock is what one answer of the service said about its clock,
// and what that shows of this machine's: the answer's Date, the lease
// object's modification time for a read, and this machine's wall clock
// minus the service's. Every party that talks to one service shares its
// clock, so a record's age on it (Date − Modified) is the same whatever the
// machines' clocks say.
type ServiceClock struct {
	// Date is the service's time of its answer.
	Date time.Time
	// Modified is the lease object's modification time on the service's
	// clock: when the service received the write that made the current
	// record. Zero after a write, or for a free key.
	Modified time.Time
	// Resolution is how much earlier than the true time Date and
	// Modified may read (HTTP dates are whole seconds).
	Resolution time.Duration
	// Offset is this machine's wall clock minus the service's, estimated
	// from when the request was sent and when its answer came; the true
	// offset lies within Offset ± Uncertainty.
	Offset, Uncertainty time.Duration

	local time.Time // this machine's clock when the answer came
}

// newServiceClock times t, the service's answer to a request sent at the
// local wall-clock time sent and answered at recv. The service answered
// at a true time in [Date, Date+Resolution), at which this machine's
// clock read between sent and recv.
func newServiceClock(t driver.ServiceTime, sent, recv time.Time) *ServiceClock {
	lo := sent.Sub(t.Date.Add(t.Resolution))
	hi := recv.Sub(t.Date)
	if hi < lo { // a wall clock stepped back during the call
		lo, hi = hi, lo
	}
	return &ServiceClock{Date: t.Date, Modified: t.Modified, Resolution: t.Resolution,
		Offset: lo + (hi-lo)/2, Uncertainty: (hi - lo) / 2, local: recv}
}

// String says how far this machine's clock is from the service's, or
// that they agree to within the measurement's uncertainty.
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
// lease of the given TTL: it is provably more than a third of a TTL from
// the service's, which is more than readers' clocks may differ by. It
// returns "" for a clock within that bound, or when the driver reported no
// service time (c nil).
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

// TimedCall runs call, times it on clk's wall clock, and returns its
// Attrs and error with the ServiceClock of what its answer said of the
// service's clock (Attrs.Time, set with an error too): nil when the
// answer said nothing (a zero Date).
func TimedCall(clk clock.Clock, call func() (driver.Attrs, error)) (driver.Attrs, *ServiceClock, error) {
	sent := clk.Wall()
	a, err := call()
	recv := clk.Wall()
	if a.Time.Date.IsZero() {
		return a, nil, err
	}
	return a, newServiceClock(a.Time, sent, recv), err
}

// Judge classifies r, read in an answer that said svc about the
// service's clock, at the reader's wall-clock time now, and says from
// when it could be taken over (zero for Suspect: see Watch).
//
// On the reader's clock alone (svc nil, or no modification time) it is
// StateAt: renewed_at plus the TTL against now. With the service's clock,
// a record is stale only when it is stale on both: by the reader's clock,
// and by the service's, Date − Modified ≥ TTL + Resolution, so that its
// true age on the service's clock is over a TTL whatever the rounding of
// the two times. No further margin is added: the holder stopped writing
// two thirds of a TTL after it sent the renewal, which the service
// stamped after it arrived, so the last third of the TTL is the margin
// for the service's clock (two front ends that differ, a step between two
// answers) and for the holder's monotonic clock running slow.
//
// A record whose stamp is more than a third of a TTL (and the resolution)
// ahead of the service's modification time was stamped by a holder whose
// clock was wrong: its stamp is not trusted, and it is judged on the
// service's clock alone (never Suspect for being stamped in the future).
// A stamp that far behind needs no rule: the service's clock, the later
// of the two, decides. A released record, and one whose TTL is over
// MaxSaneTTL, are judged as StateAt judges them.
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

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
