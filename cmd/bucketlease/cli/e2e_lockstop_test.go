//go:build linux

package cli

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/exitcode"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/filelock"
	"github.com/mushroomdb/bucketlease/driver/file"
)

// catchHoldingLock stops pid (SIGSTOP) at a moment it holds the file
// driver's lock on LEASE in b: it watches the lock's holders
// (file.Bucket.LockHolders), stops pid when it is one, and keeps it
// stopped only if it still holds the lock once stopped, else resumes it
// and watches again. It fails the test if that does not happen within
// bound.
func catchHoldingLock(t *testing.T, b *file.Bucket, pid int, bound time.Duration) {
	t.Helper()
	holds := func() bool {
		hs, err := b.LockHolders("LEASE")
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hs {
			if h.Pid == pid {
				return true
			}
		}
		return false
	}
	for deadline := time.Now().Add(bound); time.Now().Before(deadline); {
		if !holds() {
			time.Sleep(100 * time.Microsecond)
			continue
		}
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 200 && !processStopped(pid); i++ {
			time.Sleep(5 * time.Millisecond)
		}
		if holds() {
			return
		}
		syscall.Kill(pid, syscall.SIGCONT)
	}
	t.Fatalf("process %d was not caught holding the lock on LEASE within %v", pid, bound)
}

// holdStoppedHoldingLock starts a hold on a new file:// prefix (TTL 2 s)
// and stops it (SIGSTOP) while it holds the file driver's lock on LEASE,
// during a renewal: it returns the URL, the bucket and the stopped hold.
func holdStoppedHoldingLock(t *testing.T) (string, *file.Bucket, *proc) {
	t.Helper()
	u, dir := fileURL(t)
	a := start(t, nil, "hold", u, "--ttl", "2s", "--instance-id", "alpha", "--json", "--", "sleep", "100")
	a.waitFor(`"event":"acquired"`)
	fb, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	catchHoldingLock(t, fb, a.cmd.Process.Pid, 60*time.Second)
	return u, fb, a
}

// processStopped reports whether /proc/PID/stat says pid is stopped (T).
func processStopped(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && (s[i+2] == 'T' || s[i+2] == 't')
}

// TestFrozenLockHolderFile: a hold stopped (SIGSTOP) while it holds the
// file driver's lock on LEASE, during one of its renewals, blocks no one
// for longer than the driver's bound: show names it as stopped, break
// --force fails within seconds naming it and saying how to resume it
// (rather than waiting out its --timeout), a hold --wait retries with the
// same message rather than hang, and once the stopped holder is resumed
// the waiter takes the lease.
func TestFrozenLockHolderFile(t *testing.T) {
	u, _, a := holdStoppedHoldingLock(t)
	pid := a.cmd.Process.Pid
	names := regexp.MustCompile(`process ` + strconv.Itoa(pid) + `, which is stopped.*kill -CONT ` + strconv.Itoa(pid))

	s := showJSONOf(t, u)
	if len(s.LockHolders) != 1 || s.LockHolders[0] != (filelock.Holder{Pid: pid, Stopped: true}) {
		t.Errorf("show --json names the lock's holders %+v, want process %d, stopped", s.LockHolders, pid)
	}
	if out, _, _ := runCLI(t, nil, "show", u); !strings.Contains(out, "held by process "+strconv.Itoa(pid)+", which is stopped") {
		t.Errorf("show does not name the stopped process %d holding the lock:\n%s", pid, out)
	}

	br := start(t, nil, "break", u, "--force", "--version", s.Version, "--timeout", "25s")
	code := br.exitWithin(10 * time.Second)
	if code == -1 {
		t.Fatalf("break --force did not finish within 10s while process %d, stopped, holds the lock on LEASE", pid)
	}
	if code == 0 || !names.MatchString(br.errOutput()) || !strings.Contains(br.errOutput(), "kill -KILL "+strconv.Itoa(pid)) ||
		!strings.Contains(br.errOutput(), "--kill-stopped-lock-holder") {
		t.Errorf("break --force: exit %d, stderr %q; want an error naming process %d, stopped, how to resume or end it (kill -KILL), and break's --kill-stopped-lock-holder", code, br.errOutput(), pid)
	}

	w := start(t, nil, "hold", u, "--ttl", "2s", "--instance-id", "beta", "--wait", "--", "sleep", "100")
	w.waitFor(`retrying.*` + names.String())
	syscall.Kill(pid, syscall.SIGCONT)
	w.waitFor(`took-over|acquired`)
	w.signal(syscall.SIGTERM)
	w.wait()
}

// TestBreakKillsStoppedLockHolder: break --kill-stopped-lock-holder gets
// past a hold stopped (SIGSTOP) while it holds the file driver's lock on
// LEASE: it ends that process, waits until it is gone, breaks the lease,
// and the next holder takes it over; no SIGCONT is ever sent, so the
// stopped writer can never finish its write after the break.
func TestBreakKillsStoppedLockHolder(t *testing.T) {
	u, fb, a := holdStoppedHoldingLock(t)
	pid := a.cmd.Process.Pid
	s := showJSONOf(t, u)

	br := start(t, nil, "break", u, "--force", "--version", s.Version, "--kill-stopped-lock-holder", "--timeout", "25s")
	code := br.exitWithin(30 * time.Second)
	if code == -1 {
		t.Fatalf("break --kill-stopped-lock-holder did not finish within 30s while process %d, stopped, holds the lock on LEASE", pid)
	}
	if code != 0 || !strings.Contains(br.output(), "Ended process "+strconv.Itoa(pid)+" (SIGKILL)") {
		t.Fatalf("break --kill-stopped-lock-holder: exit %d, stdout %q, stderr %q; want exit 0 and the ended process %d named", code, br.output(), br.errOutput(), pid)
	}
	select {
	case <-a.exited:
		if ws := a.cmd.ProcessState.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Errorf("the stopped hold %d ended as %v, want killed by SIGKILL", pid, a.cmd.ProcessState)
		}
	case <-time.After(5 * time.Second):
		t.Errorf("the stopped hold %d is still there 5s after break said it ended it", pid)
	}
	if hs, err := fb.LockHolders("LEASE"); err != nil || len(hs) != 0 {
		t.Errorf("after the break the lock on LEASE is held by %+v (%v), want no one", hs, err)
	}
	if out, _, _ := runCLI(t, nil, "show", u); !strings.Contains(out, "broken by an operator") {
		t.Errorf("show after break --kill-stopped-lock-holder does not say the lease is broken:\n%s", out)
	}

	w := start(t, nil, "hold", u, "--ttl", "2s", "--instance-id", "beta", "--wait", "--json", "--", "sleep", "100")
	w.waitFor(`"event":"(took-over|acquired)"`)
	w.signal(syscall.SIGTERM)
	w.wait()
}

// TestKillStoppedLockHolderNeedsFile: the flag is refused, as a usage
// error, for a driver whose lock is not held by a process on this machine.
func TestKillStoppedLockHolderNeedsFile(t *testing.T) {
	_, errOut, code := runCLI(t, nil, "break", "s3://bucket/prefix", "--version", "1", "--kill-stopped-lock-holder")
	if code != exitcode.Usage || !strings.Contains(errOut, "file:// only") {
		t.Errorf("break s3:// --kill-stopped-lock-holder: exit %d, stderr %q; want exit %d, file:// only", code, errOut, exitcode.Usage)
	}
}
