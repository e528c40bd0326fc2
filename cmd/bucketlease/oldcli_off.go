//go:build !bucketlease_oldlease

package main

import "time"

// In the build users get, every old behaviour of the command is off and
// compiled out. oldcli_on.go (build tag bucketlease_oldlease) lets a
// negative control turn one back on.

// oldSharedGroup: the watchdog runs in hold's process group, with no PID
// namespace and no session of its own (the behaviour before the fix).
func oldSharedGroup() bool { return false }

// noNamespace: hold starts the watchdog without a PID namespace, as where
// none is allowed (to test that fallback).
func noNamespace() bool { return false }

// oldLeaseWatch: hold neither reads its lease object back between
// renewals nor, waiting, holds off from a lease that vanished (the behaviour before
// the fix).
func oldLeaseWatch() bool { return false }

// oldTermNoGrace: SIGTERM to hold is passed on to the command and nothing
// more: a command that traps it runs on (the behaviour before the fix).
func oldTermNoGrace() bool { return false }

// oldDropEarlySignal: a signal that reaches hold before it has read the
// watchdog's "started" report is dropped, not passed on (the cause of
// TestHoldCommandExitStatus's flake).
func oldDropEarlySignal() bool { return false }

// testReportDelay is how long the watchdog waits before it reports that
// the command started: 0 here.
func testReportDelay() time.Duration { return 0 }

// oldLateHandover: hold looks for a signal that came as the lease was taken
// before it registers its own handler, so one that comes in between is
// lost and hold holds on (the cause of TestHoldWaitSeesRelease's hang);
// put lets go of the wait's signals before it registers its own.
func oldLateHandover() bool { return false }

// testHandoverDelay is how long hold pauses between taking the lease and
// taking over the signals from the wait: 0 here.
func testHandoverDelay() time.Duration { return 0 }
