//go:build unix

package cli

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/exitcode"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// TestHoldPassesBytesThrough: the command's stdin and stdout are hold's
// own: a binary payload piped through "hold -- cat" comes out byte for
// byte, and hold's events go to stderr, or to the file --events names.
func TestHoldPassesBytesThrough(t *testing.T) {
	payload := make([]byte, 1<<20)
	if _, err := rand.Read(payload); err != nil {
		t.Fatal(err)
	}
	payload = append(payload, []byte("\n2026-12-01T00:00:00Z  acquired  not an event\r\n\x00")...)
	eventsFile := filepath.Join(t.TempDir(), "events")
	for _, extra := range [][]string{nil, {"--events", eventsFile, "--json"}} {
		u, _ := fileURL(t)
		args := append([]string{"hold", u}, extra...)
		cmd := exec.Command(binary, append(args, "--", "cat")...)
		cmd.Env = cleanEnv()
		var out, errb bytes.Buffer
		cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(payload), &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("%v: %v\n%s", extra, err, errb.String())
		}
		if !bytes.Equal(out.Bytes(), payload) {
			t.Errorf("%v: stdout is %d bytes, not the %d-byte payload (first difference at %d)", extra, out.Len(), len(payload), firstDiff(out.Bytes(), payload))
		}
		if extra == nil && !strings.Contains(errb.String(), "acquired lease LEASE") {
			t.Errorf("the events are not on stderr:\n%s", errb.String())
		}
		if extra != nil {
			ev, _ := os.ReadFile(eventsFile)
			if errb.Len() != 0 || !strings.Contains(string(ev), `"event":"acquired"`) || !strings.Contains(string(ev), `"event":"released"`) {
				t.Errorf("--events file: stderr %q, file:\n%s", errb.String(), ev)
			}
		}
	}
	// The control: the comparison sees one changed byte.
	if firstDiff(payload, append(bytes.Clone(payload[:len(payload)-1]), 1)) < 0 {
		t.Error("firstDiff misses a changed last byte")
	}
}

// firstDiff returns the first offset at which a and b differ, or -1.
func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

// TestHoldEventsFD: --events fd:N writes events to a descriptor the caller
// opened.
func TestHoldEventsFD(t *testing.T) {
	u, _ := fileURL(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd := exec.Command(binary, "hold", u, "--events", "fd:3", "--", "true")
	cmd.Env = cleanEnv()
	cmd.ExtraFiles = []*os.File{w}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %s", err, errb.String())
	}
	w.Close()
	var got bytes.Buffer
	_, _ = got.ReadFrom(r)
	if !strings.Contains(got.String(), "acquired lease LEASE") || strings.Contains(errb.String(), "acquired") {
		t.Errorf("fd 3 got %q; stderr %q", got.String(), errb.String())
	}
}

// TestHoldMissingCommandTakesNoLease: a command that cannot be found is an
// error before the lease is taken; with --wait, a stale lease is not taken
// over for it.
func TestHoldMissingCommandTakesNoLease(t *testing.T) {
	u, dir := fileURL(t)
	_, errOut, code := runCLI(t, nil, "hold", u, "--", "no-such-command-here")
	if code != 127 || !strings.Contains(errOut, "not found") || strings.Contains(errOut, "acquired") {
		t.Errorf("exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "LEASE")); err == nil {
		t.Error("a LEASE object was written for a command that does not exist")
	}
	notExec := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runCLI(t, nil, "hold", u, "--", notExec); code != 126 && code != 127 {
		t.Errorf("a file that is not executable: exit %d: %s", code, errOut)
	}
	old := time.Now().Add(-time.Hour)
	v := writeRecord(t, dir, admin.Record{InstanceID: "dead-host", AcquiredAt: old, RenewedAt: old, TTLSeconds: 30})
	if _, errOut, code := runCLI(t, nil, "hold", u, "--wait", "--", "no-such-command-here"); code != 127 {
		t.Errorf("--wait: exit %d: %s", code, errOut)
	}
	if s := showJSONOf(t, u); s.Version != string(v) || s.Holder != "dead-host" {
		t.Errorf("the stale lease was touched for a missing command: %+v", s)
	}
}

// TestHoldWaitSeesRelease: a waiting hold takes the lease soon after its
// holder releases it, not when its TTL (60 s) would have run out.
func TestHoldWaitSeesRelease(t *testing.T) {
	u, _ := fileURL(t)
	a := start(t, nil, "hold", u, "--ttl", "60s", "--instance-id", "alpha")
	a.waitFor(`acquired`)
	b := start(t, nil, "hold", u, "--ttl", "60s", "--instance-id", "beta", "--wait")
	b.waitFor(`waiting`)
	a.signal(syscall.SIGINT)
	// 130 if the SIGINT came as the lease was taken (after the acquired
	// line, before hold's own handler took over from the wait's).
	if code := a.wait(); code != 0 && code != 128+int(syscall.SIGINT) {
		t.Fatalf("alpha exit %d", code)
	}
	released := time.Now()
	b.waitFor(`took-over\s+instance beta`)
	// Bounded far below the TTL, so that a slow machine passes and a
	// waiter that sleeps until the takeover time (60 s) does not.
	if d := time.Since(released); d > 30*time.Second {
		t.Errorf("beta took the released lease %v after the release", d)
	}
	b.signal(syscall.SIGTERM)
	b.wait()
}

// signalAsTaken runs hold (or put) on a free lease with args (after the
// URL), sends SIGTERM a moment (asTakenDelay) after it says it acquired the
// lease, and returns its exit code (-1: still running after exitTimeout),
// the lease's state then, the process and the prefix's directory. The
// signal lands as the lease is taken: as a rule after hold's own handler
// has taken the signals over from the wait's, but before it if a loaded
// machine stalls hold there. Either way it must end hold. The mutants
// hold-late-handover, hold-signal-as-taken-lost, put-late-handover and
// put-signal-as-taken-lost (lab/mutate/mutants.txt) stall the handover for
// two seconds, which puts the signal inside it, and lose the signal there.
// asTakenDelay is how long signalAsTaken waits after the acquired line:
// long enough that a hold whose main goroutine a loaded machine delayed
// after the line was printed has reached the handover (the mutants' two
// second stall begins there), short enough to land well inside that stall.
const asTakenDelay = 300 * time.Millisecond

func signalAsTaken(t *testing.T, args ...string) (code int, state string, p *proc, dir string) {
	t.Helper()
	u, dir := fileURL(t)
	p = start(t, nil, append([]string{args[0], u}, args[1:]...)...)
	p.waitFor(`acquired lease`)
	time.Sleep(asTakenDelay)
	p.signal(syscall.SIGTERM)
	code = p.exitWithin(exitTimeout)
	return code, showJSONOf(t, u).State, p, dir
}

// TestHoldSignalAsLeaseIsTaken: a SIGTERM that reaches hold as the lease is
// taken ends hold, whether its own handler has taken over from the wait's
// yet (then the command never starts) or not (then the command gets it):
// hold releases the lease and exits 143. Once, such a signal was lost and
// hold held on (the hang of TestHoldWaitSeesRelease).
func TestHoldSignalAsLeaseIsTaken(t *testing.T) {
	code, state, p, _ := signalAsTaken(t, "hold", "--", "sleep", "300")
	if code != 128+int(syscall.SIGTERM) || state != "released" {
		t.Errorf("exit %d, lease %s; want 143 and released:\n%s", code, state, p.output())
	}
}

// TestPutSignalAsLeaseIsTaken: the same for put, which once lost such a
// signal between its two signal contexts and uploaded all the same, or was
// killed by it and left its lease fresh. Whether the signal comes before
// the producer starts or after, put uploads nothing, releases and exits 143.
func TestPutSignalAsLeaseIsTaken(t *testing.T) {
	// The producer never exits by itself, so an upload that goes on after
	// the signal never ends: its output goes nowhere near put's stderr, so
	// that put's end is seen even if the producer outlives it.
	code, state, p, dir := signalAsTaken(t, "put", "-v", "dumps/a", "--", "sh", "-c", "echo restore point; exec sleep 300 >/dev/null 2>&1")
	if code != 128+int(syscall.SIGTERM) || state != "released" || !strings.Contains(p.output(), "nothing was") {
		t.Errorf("exit %d, lease %s; want 143, released and nothing uploaded:\n%s", code, state, p.output())
	}
	if _, err := os.Stat(filepath.Join(dir, "dumps", "a")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("put uploaded dumps/a after a SIGTERM that came as the lease was taken (stat: %v)", err)
	}
}

// TestHoldReleaseFailed: when the release fails, hold says so, does not
// report "released", and exits 125.
func TestHoldReleaseFailed(t *testing.T) {
	for _, asJSON := range []bool{false, true} {
		u, dir := fileURL(t)
		// The command makes the file driver's lock directory unusable.
		locks := filepath.Join(dir, ".bucketlease", "locks")
		script := fmt.Sprintf(`mv %s %s.moved && touch %s`, locks, locks, locks)
		args := []string{"hold", u, "--instance-id", "alpha", "--", "sh", "-c", script}
		if asJSON {
			args = []string{"hold", u, "--json", "--instance-id", "alpha", "--", "sh", "-c", script}
		}
		_, errOut, code := runCLI(t, nil, args...)
		if code != exitcode.ReleaseFailed || !strings.Contains(errOut, "could not release the lease LEASE") {
			t.Errorf("json %v: exit %d, want %d:\n%s", asJSON, code, exitcode.ReleaseFailed, errOut)
		}
		if strings.Contains(errOut, "released lease") || strings.Contains(errOut, `"event":"released"`) {
			t.Errorf("json %v: a release that failed was reported:\n%s", asJSON, errOut)
		}
		if n := strings.Count(errOut, "release-failed"); n != 1 {
			t.Errorf("json %v: %d release-failed events, want one:\n%s", asJSON, n, errOut)
		}
		os.Remove(locks)
		os.Rename(locks+".moved", locks)
		if s := showJSONOf(t, u); s.State != "fresh" || s.Holder != "alpha" {
			t.Errorf("show: %+v", s)
		}
	}
}

// TestShowAndBreakCreateNothing: show and break on a file:// directory that
// does not exist say so and create nothing; on an empty directory they
// report a free prefix and create nothing in it.
func TestShowAndBreakCreateNothing(t *testing.T) {
	root := t.TempDir()
	missing := filepath.Join(root, "typo", "a", "b")
	for _, args := range [][]string{{"show", "file://" + missing}, {"break", "file://" + missing, "--version", "x"}} {
		_, errOut, code := runCLI(t, nil, args...)
		if code != exitcode.Failure || !strings.Contains(errOut, "no such directory") {
			t.Errorf("%v: exit %d: %s", args, code, errOut)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "typo")); err == nil {
		t.Errorf("show or break created %s", filepath.Join(root, "typo"))
	}
	empty := filepath.Join(root, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, _, code := runCLI(t, nil, "show", "file://"+empty); code != 0 || !strings.Contains(out, "free") {
		t.Errorf("show on an empty directory: exit %d:\n%s", code, out)
	}
	if out, _, code := runCLI(t, nil, "break", "file://"+empty, "--version", "x"); code != 0 || !strings.Contains(out, "nothing to break") {
		t.Errorf("break on an empty directory: exit %d:\n%s", code, out)
	}
	if entries, _ := os.ReadDir(empty); len(entries) != 0 {
		t.Errorf("show or break created %v in an empty directory", entries)
	}
	// The control: hold on the same directory does create the lease.
	if _, errOut, code := runCLI(t, nil, "hold", "file://"+empty, "--", "true"); code != 0 {
		t.Fatalf("hold: exit %d: %s", code, errOut)
	}
	if entries, _ := os.ReadDir(empty); len(entries) == 0 {
		t.Error("the control: hold created nothing either")
	}
}

// TestHoldBrokenByOperator: a lease broken with "bucketlease break" is
// reported as such, not as lost to another instance.
func TestHoldBrokenByOperator(t *testing.T) {
	u, _ := fileURL(t)
	a := start(t, nil, "hold", u, "--ttl", "3s", "--instance-id", "alpha", "--", "sleep", "120")
	a.waitFor(`command-started`)
	s := showJSONOf(t, u)
	if _, _, code := runCLI(t, nil, "break", u, "--version", s.Version, "--force"); code != 0 {
		// The holder may have renewed between show and break.
		s = showJSONOf(t, u)
		if _, errOut, code := runCLI(t, nil, "break", u, "--version", s.Version, "--force"); code != 0 {
			t.Fatalf("break: exit %d: %s", code, errOut)
		}
	}
	a.waitFor(`lost\s+lease LEASE was broken by an operator \(bucketlease break\)`)
	if code := a.wait(); code != exitcode.LeaseEnded {
		t.Errorf("exit %d, want %d", code, exitcode.LeaseEnded)
	}
	if strings.Contains(a.output(), "lost lease LEASE to instance") {
		t.Errorf("the break was reported as a takeover:\n%s", a.output())
	}
}

// TestHoldInstanceInUse: a second live process with the same instance id
// is refused: at once without --wait (exit 6, naming the causes), and with
// --wait, exit 6 as soon as the record is seen renewed by the other
// process, long before --wait-timeout.
func TestHoldInstanceInUse(t *testing.T) {
	u, _ := fileURL(t)
	a := start(t, nil, "hold", u, "--ttl", "6s", "--instance-id", "same")
	a.waitFor(`acquired`)
	_, errOut, code := runCLI(t, nil, "hold", u, "--ttl", "6s", "--instance-id", "same")
	if code != exitcode.InstanceInUse || !strings.Contains(errOut, "another live process") {
		t.Errorf("without --wait: exit %d:\n%s", code, errOut)
	}
	started := time.Now()
	_, errOut, code = runCLI(t, nil, "hold", u, "--ttl", "6s", "--instance-id", "same", "--wait", "--wait-timeout", "120s")
	if code != exitcode.InstanceInUse || !strings.Contains(errOut, "another live process uses this instance id") || !strings.Contains(errOut, "--instance-id") {
		t.Errorf("--wait: exit %d, want %d:\n%s", code, exitcode.InstanceInUse, errOut)
	}
	if d := time.Since(started); d > 100*time.Second {
		t.Errorf("--wait took %v to give up", d)
	}
	if s := showJSONOf(t, u); s.Holder != "same" || s.State != "fresh" {
		t.Errorf("show: %+v", s)
	}
}

// TestHoldClosedStdout: the command's stdout is closed by its reader (as in
// "hold … -- producer | head -3"): the command gets SIGPIPE, as it would
// without hold; hold releases the lease and exits with its status.
func TestHoldClosedStdout(t *testing.T) {
	u, _ := fileURL(t)
	cmd := exec.Command(binary, "hold", u, "--", "sh", "-c", `while :; do echo tick; done`)
	cmd.Env = cleanEnv()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 15)
	if _, err := io.ReadFull(out, buf); err != nil || string(buf) != "tick\ntick\ntick\n" {
		t.Fatalf("read %q, %v", buf, err)
	}
	out.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(exitTimeout):
		_ = cmd.Process.Kill()
		t.Fatal("hold did not exit after its command's stdout was closed")
	}
	if code := cmd.ProcessState.ExitCode(); code != 128+int(syscall.SIGPIPE) {
		t.Errorf("exit %d, want %d (the command killed by SIGPIPE):\n%s", code, 128+int(syscall.SIGPIPE), errb.String())
	}
	if !strings.Contains(errb.String(), "released lease LEASE") {
		t.Errorf("the lease was not released:\n%s", errb.String())
	}
}

// TestTimesInUTC: whatever the local time zone, every time hold and show
// print is in UTC with its zone.
func TestTimesInUTC(t *testing.T) {
	u, _ := fileURL(t)
	tz := []string{"TZ=Asia/Kolkata"}
	a := start(t, tz, "hold", u, "--ttl", "30s", "--instance-id", "alpha")
	a.waitFor(`holding`)
	b := start(t, tz, "hold", u, "--ttl", "30s", "--instance-id", "beta", "--wait")
	line := b.waitFor(`waiting`)
	stamp := `\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`
	if !regexp.MustCompile(`^` + stamp + `\s+waiting\s.*takeover possible at ` + stamp).MatchString(line) {
		t.Errorf("a time not in UTC: %q", line)
	}
	out, _, _ := runCLI(t, tz, "show", u)
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "(") && strings.Contains(l, ":") && !regexp.MustCompile(`\(`+stamp+`\)`).MatchString(l) {
			t.Errorf("show prints a time not in UTC: %q", l)
		}
	}
	// The control: the pattern refuses a local time.
	if regexp.MustCompile(stamp).MatchString("2026-12-01T10:00:00+05:30") {
		t.Error("the UTC pattern accepts an offset")
	}
}
