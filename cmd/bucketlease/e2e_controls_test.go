//go:build linux && bucketlease_oldlease

package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestWatchdogGroupKillOldEscapes is the negative control of
// TestWatchdogGroupKill: with the watchdog in hold's process group and no
// PID namespace, as before the fix, a group kill takes the watchdog too
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

// TestDeletedLeaseOldOverlaps is the negative control of
// TestDeletedLeaseStopsCommand: without the read-back and the waiter's
// hold-off, as before the fix, the waiter takes the deleted lease while
// the first command still writes (it is stopped only at its next renewal,
// a third of the 30 s TTL after the deletion).
func TestDeletedLeaseOldOverlaps(t *testing.T) {
	deleted, lastA, startB, _ := deletedLease(t, "30s", []string{"BUCKETLEASE_OLD_CLI=no-lease-watch"})
	if lastA.Before(startB) {
		t.Errorf("the old hold: no overlap (first command's last write %v after the deletion, waiter started %v after it); the scenario should have found two writers",
			lastA.Sub(deleted), startB.Sub(deleted))
	}
	t.Logf("old behaviour: both wrote for %v", lastA.Sub(startB).Round(time.Millisecond))
}

// TestSigtermOldIgnoresGrace is the negative control of
// TestSigtermGraceThenKill: with SIGTERM only passed on, as before issue
// 22, a command that traps it keeps hold (and the lease) alive.
func TestSigtermOldIgnoresGrace(t *testing.T) {
	code, state, _ := sigtermTrapped(t, []string{"BUCKETLEASE_OLD_CLI=term-no-grace"}, 10*time.Second)
	if code != -1 || state != "fresh" {
		t.Errorf("the old hold: exit %d, lease %s; want still running 10 s after SIGTERM (2 s grace), lease fresh", code, state)
	}
}

// earlySignal starts hold with a command that traps SIGINT, with the watchdog
// slow to report that it started it, sends SIGINT as soon as the command
// runs, and reports whether the command got it within bound.
func earlySignal(t *testing.T, old string, bound time.Duration) bool {
	u, _ := fileURL(t)
	a := start(t, []string{"BUCKETLEASE_OLD_CLI=slow-reports" + old}, "hold", u, "--", "sh", "-c", `trap 'echo child got INT; exit 3' INT; echo ready; sleep 120 & wait`)
	a.waitFor(`ready`)
	a.signal(syscall.SIGINT)
	end := time.Now().Add(bound)
	for time.Now().Before(end) {
		if strings.Contains(a.output(), "child got INT") {
			if code := a.wait(); code != 3 {
				t.Errorf("exit %d, want the command's 3", code)
			}
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// TestSignalBeforeStartedReport: the flake of TestHoldCommandExitStatus
// made deterministic. A SIGINT that reaches hold after the command started
// but before hold has read the watchdog's "started" report (here held back
// by a second, as a loaded machine may delay the watchdog) is passed on all the same.
func TestSignalBeforeStartedReport(t *testing.T) {
	if !earlySignal(t, "", exitTimeout) {
		t.Error("the command never got the SIGINT sent before hold read its started report")
	}
}

// TestSignalBeforeStartedReportOldDropped is its negative control: the old
// hold dropped such a signal, and the command never got it.
func TestSignalBeforeStartedReportOldDropped(t *testing.T) {
	if earlySignal(t, ",drop-early-signal", 5*time.Second) {
		t.Error("the old hold passed the early SIGINT on; the scenario should have found it dropped")
	}
}

// signalAsTaken starts hold (or put) with the handover of the signals from
// the wait to hold's own handler held back by two seconds, as a loaded
// machine may stall it, sends SIGTERM inside that window (once hold says
// it pauses there, after the lease is taken), and
// returns the exit code (-1: still running after bound), the lease's
// state then, the process and the prefix's directory.
func signalAsTaken(t *testing.T, old string, bound time.Duration, args ...string) (code int, state string, p *proc, dir string) {
	u, dir := fileURL(t)
	p = start(t, []string{"BUCKETLEASE_OLD_CLI=slow-handover" + old}, append([]string{args[0], u}, args[1:]...)...)
	p.waitFor(`test-pause`)
	p.signal(syscall.SIGTERM)
	code = p.exitWithin(bound)
	return code, showJSONOf(t, u).State, p, dir
}

// TestHoldSignalAsLeaseIsTaken: the hang of TestHoldWaitSeesRelease made
// deterministic. A SIGTERM that reaches hold as the lease is taken, before
// hold's own handler has taken over from the wait's, still ends hold: it
// releases the lease and exits 143.
func TestHoldSignalAsLeaseIsTaken(t *testing.T) {
	code, state, p, _ := signalAsTaken(t, "", exitTimeout, "hold")
	if code != 128+int(syscall.SIGTERM) || state != "released" || !strings.Contains(p.output(), "as the lease was taken") {
		t.Errorf("exit %d, lease %s; want 143 and released:\n%s", code, state, p.output())
	}
}

// TestHoldSignalAsLeaseIsTakenOldLost is its negative control: the old
// hold looked for such a signal before it registered its own handler,
// lost one that came in between, and held on.
func TestHoldSignalAsLeaseIsTakenOldLost(t *testing.T) {
	code, state, _, _ := signalAsTaken(t, ",late-handover", 5*time.Second, "hold")
	if code != -1 || state != "fresh" {
		t.Errorf("the old hold: exit %d, lease %s; want still running 5 s after SIGTERM, lease fresh", code, state)
	}
}

// TestPutSignalAsLeaseIsTaken: the same for put, which once lost such a
// signal between its two signal contexts and uploaded all the same. It
// stops before it uploads anything, releases, and exits 143.
func TestPutSignalAsLeaseIsTaken(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src")
	if err := os.WriteFile(src, []byte("restore point"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, state, p, dir := signalAsTaken(t, "", exitTimeout, "put", "-v", "dumps/a", src)
	out := p.output()
	if code != 128+int(syscall.SIGTERM) || state != "released" || !strings.Contains(out, "nothing was uploaded") {
		t.Errorf("exit %d, lease %s; want 143, released and nothing uploaded:\n%s", code, state, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "dumps", "a")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("put uploaded dumps/a after a SIGTERM that came as the lease was taken (stat: %v)", err)
	}
}

// TestPutSignalAsLeaseIsTakenOldLost is its negative control: the old put
// let go of the wait's signals before it registered the upload's, and a
// SIGTERM in between killed it outright, leaving its lease fresh (or,
// caught by the wait's handler, was ignored and the upload went ahead).
func TestPutSignalAsLeaseIsTakenOldLost(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src")
	if err := os.WriteFile(src, []byte("restore point"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, state, p, _ := signalAsTaken(t, ",late-handover", exitTimeout, "put", "-v", "dumps/a", src)
	if code == 128+int(syscall.SIGTERM) && state == "released" {
		t.Errorf("the old put: exit %d, lease %s; the scenario should have found the signal lost:\n%s", code, state, p.output())
	}
	t.Logf("old behaviour: exit %d, lease %s", code, state)
}
