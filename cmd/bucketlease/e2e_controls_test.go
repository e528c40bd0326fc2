//go:build linux && bucketlease_oldlease

package main

import "testing"

// TestWatchdogGroupKillOldEscapes is the negative control of
// TestWatchdogGroupKill: with the watchdog in hold's process group and no
// PID namespace, as before issue 22, a group kill takes the watchdog too
// and the setsid writer writes on past the fence deadline; the scenario
// finds it.
func TestWatchdogGroupKillOldEscapes(t *testing.T) {
	late, quiet := groupKill(t, []string{"BUCKETLEASE_OLD_CLI=shared-group"})
	if quiet || len(late) == 0 {
		t.Errorf("the old watchdog: quiet %v, %d late ticks; the scenario should have found an escaped writer", quiet, len(late))
	}
	t.Logf("old behaviour: %d ticks after the fence deadline, quiet %v", len(late), quiet)
}

// TestWatchdogGroupKillSessionFallback: where no PID namespace is allowed,
// the watchdog runs in a session of its own; a kill of hold's process group
// does not reach it, and it kills the setsid writer at once.
func TestWatchdogGroupKillSessionFallback(t *testing.T) {
	late, quiet := groupKill(t, []string{"BUCKETLEASE_OLD_CLI=no-namespace"})
	if !quiet || len(late) > 0 {
		t.Errorf("without a PID namespace: quiet %v, %d ticks after the fence deadline", quiet, len(late))
	}
}
