//go:build bucketlease_oldlease

package main

import (
	"os"
	"slices"
	"strings"
	"time"
)

// oldCLI reports whether the negative-control switch name is listed in
// BUCKETLEASE_OLD_CLI (comma-separated). Only a build with the tag
// bucketlease_oldlease reads it; see oldcli_off.go.
func oldCLI(name string) bool {
	return slices.Contains(strings.Split(os.Getenv("BUCKETLEASE_OLD_CLI"), ","), name)
}

// oldSharedGroup: the watchdog runs in hold's process group, with no PID
// namespace and no session of its own (the behaviour before the fix).
func oldSharedGroup() bool { return oldCLI("shared-group") }

// noNamespace: hold starts the watchdog without a PID namespace, as where
// none is allowed (to test that fallback).
func noNamespace() bool { return oldCLI("no-namespace") }

// oldLeaseWatch: hold neither reads its lease object back between
// renewals nor, waiting, holds off from a lease that vanished (the behaviour before
// the fix).
func oldLeaseWatch() bool { return oldCLI("no-lease-watch") }

// oldTermNoGrace: SIGTERM to hold is passed on to the command and nothing
// more: a command that traps it runs on (the behaviour before the fix).
func oldTermNoGrace() bool { return oldCLI("term-no-grace") }

// oldDropEarlySignal: a signal that reaches hold before it has read the
// watchdog's "started" report is dropped, not passed on (the cause of
// TestHoldCommandExitStatus's flake).
func oldDropEarlySignal() bool { return oldCLI("drop-early-signal") }

// testReportDelay is how long the watchdog waits before it reports that
// the command started: a second with slow-reports, which makes the window in
// which a signal comes before the "started" report wide enough to hit.
func testReportDelay() time.Duration {
	if oldCLI("slow-reports") {
		return time.Second
	}
	return 0
}

// oldLateHandover: hold looks for a signal that came as the lease was taken
// before it registers its own handler, so one that comes in between is
// lost and hold holds on (the cause of TestHoldWaitSeesRelease's hang);
// put lets go of the wait's signals before it registers its own.
func oldLateHandover() bool { return oldCLI("late-handover") }

// testHandoverDelay is how long hold pauses between taking the lease and
// taking over the signals from the wait: two seconds with slow-handover, which
// makes the window in which a signal comes as the lease is taken wide
// enough to hit.
func testHandoverDelay() time.Duration {
	if oldCLI("slow-handover") {
		return 2 * time.Second
	}
	return 0
}
