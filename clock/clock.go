// Package clock gives the lease its two readings of time, so that tests and
// the simulator can skew, jump and freeze each one. The lease fences on
// both: the monotonic clock never jumps but stops while a machine is
// suspended; the wall clock runs through a suspension but can be stepped.
package clock

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"
)

// Clock is a source of wall and monotonic time and monotonic timers.
type Clock interface {
	// Wall returns the wall-clock time, without a monotonic reading.
	Wall() time.Time
	// Mono returns the monotonic time since an arbitrary origin. It never
	// goes backwards; it may stand still while the machine is suspended.
	Mono() time.Duration
	// AfterFunc calls f in its own goroutine after d of monotonic time; stop
	// cancels the call and reports whether it did.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// System is the machine's clock. The zero value is ready to use.
type System struct{}

var origin = time.Now()

// Wall returns time.Now() stripped of its monotonic reading.
func (System) Wall() time.Time { return time.Now().Round(0) }

// Mono returns the time since the process started, on the monotonic clock.
func (System) Mono() time.Duration { return time.Since(origin) }

// AfterFunc is time.AfterFunc.
func (System) AfterFunc(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }

// Sleep waits d on c's monotonic clock, or until ctx is done (its error).
func Sleep(ctx context.Context, c Clock, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	done := make(chan struct{})
	stop := c.AfterFunc(d, func() { close(done) })
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		stop()
		return ctx.Err()
	}
}

// Fake is a clock that moves only when told to. It is safe for concurrent use.
type Fake struct {
	mu     sync.Mutex
	wall   time.Time
	mono   time.Duration
	seq    uint64
	timers []*fakeTimer
}

type fakeTimer struct {
	at      time.Duration
	seq     uint64
	f       func()
	stopped bool
}

// NewFake returns a fake clock whose wall clock reads start.
func NewFake(start time.Time) *Fake { return &Fake{wall: start.Round(0), mono: time.Hour} }

// Wall returns the fake wall-clock time.
func (c *Fake) Wall() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wall
}

// Mono returns the fake monotonic time.
func (c *Fake) Mono() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mono
}

// AfterFunc schedules f for when the fake monotonic clock has advanced d.
// f runs inside the Advance or AdvanceMono call that reaches its time, in
// order of due time, so every timer due has run when Advance returns.
func (c *Fake) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t := &fakeTimer{at: c.mono + max(d, 0), seq: c.seq, f: f}
	c.timers = append(c.timers, t)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if t.stopped {
			return false
		}
		t.stopped = true
		return true
	}
}

// Timers returns the number of timers that have neither fired nor been
// stopped, so a test can wait until the code under test is asleep.
func (c *Fake) Timers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.timers {
		if !t.stopped {
			n++
		}
	}
	return n
}

// Advance moves both clocks forward by d, firing due timers on the way
// with both clocks set to each timer's due time.
func (c *Fake) Advance(d time.Duration) { c.advance(d, true) }

// AdvanceMono moves only the monotonic clock forward by d, firing due
// timers; the wall clock stands still.
func (c *Fake) AdvanceMono(d time.Duration) { c.advance(d, false) }

// AdvanceWall steps only the wall clock, forwards or backwards. It fires no
// timers, which run on the monotonic clock.
func (c *Fake) AdvanceWall(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wall = c.wall.Add(d)
}

// maxFiringsAtOneInstant bounds the timers fired at one instant, so that a
// zero-delay timer re-armed forever panics rather than spins.
const maxFiringsAtOneInstant = 10000

func (c *Fake) advance(d time.Duration, wall bool) {
	c.mu.Lock()
	target := c.mono + max(d, 0)
	same, at := 0, c.mono
	for {
		t := c.nextDue(target)
		if t == nil {
			break
		}
		if t.at != at {
			same, at = 0, t.at
		}
		if same++; same > maxFiringsAtOneInstant {
			c.mu.Unlock()
			panic(fmt.Sprintf("clock.Fake: %d timers fired at monotonic time %v without the clock moving: a timer keeps re-arming itself with no delay (is a deadline checked only on the wall clock?)", same, at))
		}
		if wall {
			c.wall = c.wall.Add(t.at - c.mono)
		}
		c.mono = max(c.mono, t.at)
		t.stopped = true
		c.mu.Unlock()
		t.f()
		c.mu.Lock()
	}
	if wall {
		c.wall = c.wall.Add(target - c.mono)
	}
	c.mono = target
	c.compact()
	c.mu.Unlock()
}

// nextDue returns the earliest live timer due by target; c.mu is held.
func (c *Fake) nextDue(target time.Duration) *fakeTimer {
	var next *fakeTimer
	for _, t := range c.timers {
		if t.stopped || t.at > target {
			continue
		}
		if next == nil || t.at < next.at || (t.at == next.at && t.seq < next.seq) {
			next = t
		}
	}
	return next
}

// compact drops finished timers; c.mu is held.
func (c *Fake) compact() {
	live := c.timers[:0]
	for _, t := range c.timers {
		if !t.stopped {
			live = append(live, t)
		}
	}
	clear(c.timers[len(live):])
	c.timers = live
	sort.Slice(c.timers, func(i, j int) bool { return c.timers[i].seq < c.timers[j].seq })
}

// Offset is Clock with its wall reading off by D: a machine whose wall
// clock has been wrong since before the process started, which only a
// comparison with the service's clock can show (lease.ErrClock).
type Offset struct {
	Clock Clock
	D     time.Duration
}

// Wall returns Clock's wall time plus D.
func (o Offset) Wall() time.Time { return o.Clock.Wall().Add(o.D) }

// Mono returns Clock's monotonic time.
func (o Offset) Mono() time.Duration { return o.Clock.Mono() }

// AfterFunc is Clock's.
func (o Offset) AfterFunc(d time.Duration, f func()) func() bool { return o.Clock.AfterFunc(d, f) }
