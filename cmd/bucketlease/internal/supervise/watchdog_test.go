//go:build unix

package supervise

// Tests that kill mutants of the watchdog which the process tests let
// survive (scripts/mutate, lab/mutate/mutants.txt).

import (
	"testing"
	"time"
)

// TestWatchdogMutantsDeadlineOnEitherClock: the watchdog's deadline has
// passed once either clock reaches it, the monotonic one (a wall clock
// stepped back must not extend it) or the wall one (a monotonic clock that
// stood still while the machine was suspended must not either), and never
// once it has been reported (-1). (Mutant watchdog-mono-only.)
func TestWatchdogMutantsDeadlineOnEitherClock(t *testing.T) {
	hour := int64(time.Hour)
	mono, wall := MonoNow(), time.Now().UnixNano()
	for _, tc := range []struct {
		name       string
		mono, wall int64
		past       bool
	}{
		{"neither clock", mono + hour, wall + hour, false},
		{"the monotonic clock", mono - 1, wall + hour, true},
		{"the wall clock", mono + hour, wall - 1, true},
		{"both clocks", mono - 1, wall - 1, true},
		{"reported already", -1, -1, false},
	} {
		w := &watchdog{monoDeadline: tc.mono, wallDeadline: tc.wall}
		if got := w.pastDeadline(); got != tc.past {
			t.Errorf("deadline passed on %s: pastDeadline() = %v, want %v", tc.name, got, tc.past)
		}
	}
}
