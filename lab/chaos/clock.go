//go:build linux

package chaos

import (
	"time"

	"github.com/mushroomdb/bucketlease/clock"
)

// SkewClock is the system clock with its wall reading moved by Offset: a
// machine whose clock runs ahead (positive) or behind (negative). The
// monotonic reading and timers are the system's. It exists for the chaos
// workers only, since the machine's own clock is shared by all of them.
type SkewClock struct {
	Offset time.Duration
}

var _ clock.Clock = SkewClock{}

// Wall returns the system's wall clock plus Offset.
func (c SkewClock) Wall() time.Time { return clock.System{}.Wall().Add(c.Offset) }

// Mono returns the system's monotonic reading.
func (c SkewClock) Mono() time.Duration { return clock.System{}.Mono() }

// AfterFunc is the system's.
func (c SkewClock) AfterFunc(d time.Duration, f func()) func() bool {
	return clock.System{}.AfterFunc(d, f)
}
