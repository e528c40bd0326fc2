//go:build linux

package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/exitcode"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/file"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// A tick writer is a process that appends the time (ns since the epoch) to
// a file every 20 ms: a stand-in for a command that writes under the
// lease. Its pid goes to pidFile. From the ticks, a test sees whether
// anything was written after a deadline.
func tickWriter(ticks, pidFile string) string {
	return fmt.Sprintf(`%s > %s; while :; do date +%%s%%N >> %s; sleep 0.02; done`, echoPID, pidFile, ticks)
}

// echoPID is shell that prints the shell's own pid as the machine sees it:
// $$ is its pid in its PID namespace, which under hold is the watchdog's,
// not the test's. /proc/self, opened by the shell itself, is the host's.
const echoPID = `read p _ < /proc/self/stat; echo $p`

// readTicks returns the ticks written so far.
func readTicks(t *testing.T, path string) []int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []int64
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.ParseInt(f, 10, 64); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// waitTicks waits until path holds at least n ticks.
func waitTicks(t *testing.T, path string, n int) {
	t.Helper()
	for end := time.Now().Add(eventTimeout); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if len(readTicks(t, path)) >= n {
			return
		}
	}
	t.Fatalf("fewer than %d ticks in %s after %v", n, path, eventTimeout)
}

// waitQuiet waits until the ticks file has not grown for a second (bounded)
// and reports whether it went quiet.
func waitQuiet(path string) bool { return waitQuietWithin(path, eventTimeout) }

// waitQuietWithin is waitQuiet with its bound.
func waitQuietWithin(path string, bound time.Duration) bool {
	last, quietSince := int64(-1), time.Now()
	for end := time.Now().Add(bound); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		fi, err := os.Stat(path)
		size := int64(0)
		if err == nil {
			size = fi.Size()
		}
		if size != last {
			last, quietSince = size, time.Now()
		} else if time.Since(quietSince) > time.Second {
			return true
		}
	}
	return false
}

// ticksAfter returns the ticks later than deadline.
func ticksAfter(ticks []int64, deadline time.Time) []time.Time {
	var late []time.Time
	for _, n := range ticks {
		if n > deadline.UnixNano() {
			late = append(late, time.Unix(0, n))
		}
	}
	return late
}

// pidFrom reads a pid a script wrote.
func pidFrom(t *testing.T, path string) int {
	t.Helper()
	for end := time.Now().Add(eventTimeout); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(path)
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n > 0 {
			return n
		}
	}
	t.Fatalf("no pid in %s", path)
	return 0
}

// alive reports whether pid is a live process (not a zombie).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && len(s) > i+2 && s[i+2] != 'Z' && s[i+2] != 'X'
}

// procState returns the state letter of pid (R, S, T, Z…), or "".
func procState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || len(s) < i+3 {
		return ""
	}
	return s[i+2 : i+3]
}

// waitState waits until pid is in state st.
func waitState(t *testing.T, pid int, st string) {
	t.Helper()
	for end := time.Now().Add(eventTimeout); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if procState(pid) == st {
			return
		}
	}
	t.Fatalf("pid %d not in state %s within %v (now %q)", pid, st, eventTimeout, procState(pid))
}

// waitGone waits until none of pids is alive, and fails naming those that
// are.
func waitGone(t *testing.T, pids ...int) {
	t.Helper()
	for end := time.Now().Add(eventTimeout); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		n := 0
		for _, p := range pids {
			if alive(p) {
				n++
			}
		}
		if n == 0 {
			return
		}
	}
	for _, p := range pids {
		if alive(p) {
			t.Errorf("pid %d still running %v later", p, eventTimeout)
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
	}
}

// leaseRecord reads the lease object of a file:// prefix.
func leaseRecord(t *testing.T, dir string) admin.Record {
	t.Helper()
	b, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	rc, _, err := b.Get(context.Background(), "LEASE", driver.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := admin.DecodeRecord(data)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// fenceDeadline is the lease's fence deadline after the record's last
// renewal: two thirds of its TTL after renewed_at.
func fenceDeadline(rec admin.Record) time.Time {
	return rec.RenewedAt.Add(rec.TTL() * 2 / 3)
}

// TestTicksAfterDetectsAWriter is the negative control of the tick checks:
// a tick writer nobody stops writes after any deadline, and the checks say
// so.
func TestTicksAfterDetectsAWriter(t *testing.T) {
	dir := t.TempDir()
	ticks, pidFile := filepath.Join(dir, "ticks"), filepath.Join(dir, "pid")
	cmd := exec.Command("sh", "-c", tickWriter(ticks, pidFile))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	deadline := time.Now().Add(200 * time.Millisecond)
	waitTicks(t, ticks, 30)
	if waitQuietWithin(ticks, 5*time.Second) {
		t.Error("waitQuiet: a live writer went quiet")
	}
	if late := ticksAfter(readTicks(t, ticks), deadline); len(late) == 0 {
		t.Error("ticksAfter: no tick after the deadline from a writer nobody stopped")
	}
	if pid := pidFrom(t, pidFile); !alive(pid) {
		t.Errorf("alive(%d) = false for a running writer", pid)
	}
}

// TestWatchdogStoppedHold: hold is stopped (SIGSTOP) while a grandchild
// writes. The watchdog kills the command and the grandchild before the
// fence deadline; another instance takes the lease over after the TTL;
// hold, continued, finds its lease ended and exits 124; nothing was written
// after the fence deadline.
func TestWatchdogStoppedHold(t *testing.T) {
	u, dir := fileURL(t)
	work := t.TempDir()
	ticks, pidFile := filepath.Join(work, "ticks"), filepath.Join(work, "pid")
	script := fmt.Sprintf(`sh -c '%s' & wait`, tickWriter(ticks, pidFile))
	a := start(t, nil, "hold", u, "--ttl", "6s", "--instance-id", "alpha", "--", "sh", "-c", script)
	a.waitFor(`command-started`)
	waitTicks(t, ticks, 5)
	writer := pidFrom(t, pidFile)

	a.signal(syscall.SIGSTOP)
	waitState(t, a.cmd.Process.Pid, "T")
	time.Sleep(100 * time.Millisecond) // a renewal written as the signal came is on disk now
	fence := fenceDeadline(leaseRecord(t, dir))

	b := start(t, nil, "hold", u, "--ttl", "6s", "--instance-id", "beta", "--wait", "--json")
	b.waitFor(`"event":"took-over"`)
	tookOver := time.Now()
	if !waitQuiet(ticks) {
		t.Fatal("the grandchild still writes after the lease was taken over: two writers")
	}
	waitGone(t, writer)
	if late := ticksAfter(readTicks(t, ticks), fence); len(late) > 0 {
		t.Errorf("%d ticks after the fence deadline %s, the first at %s (taken over at %s)",
			len(late), fence.Format(time.RFC3339Nano), late[0].Format(time.RFC3339Nano), tookOver.Format(time.RFC3339Nano))
	}

	a.signal(syscall.SIGCONT)
	if code := a.wait(); code != exitcode.LeaseEnded {
		t.Errorf("hold exit %d after SIGCONT, want %d", code, exitcode.LeaseEnded)
	}
	if s := showJSONOf(t, u); s.Holder != "beta" || s.State != "fresh" {
		t.Errorf("after hold came back, show says %+v; want beta's fresh lease", s)
	}
	if n := len(readTicks(t, ticks)); waitQuiet(ticks) && len(readTicks(t, ticks)) != n {
		t.Error("the ticks resumed after hold was continued")
	}
	b.signal(syscall.SIGTERM)
	if code := b.wait(); code != 0 {
		t.Errorf("beta exit %d", code)
	}
}

// TestWatchdogKilledHold: hold is killed (SIGKILL) while the command's
// children write, one of them in its own session (setsid): the watchdog
// kills them all at once, long before the fence deadline.
func TestWatchdogKilledHold(t *testing.T) {
	u, dir := fileURL(t)
	work := t.TempDir()
	t1, p1 := filepath.Join(work, "ticks1"), filepath.Join(work, "pid1")
	t2, p2 := filepath.Join(work, "ticks2"), filepath.Join(work, "pid2")
	script := fmt.Sprintf(`sh -c '%s' & setsid sh -c '%s' & wait`, tickWriter(t1, p1), tickWriter(t2, p2))
	a := start(t, nil, "hold", u, "--ttl", "30s", "--instance-id", "alpha", "--", "sh", "-c", script)
	waitTicks(t, t1, 5)
	waitTicks(t, t2, 5)
	w1, w2 := pidFrom(t, p1), pidFrom(t, p2)

	a.signal(syscall.SIGKILL)
	a.wait()
	fence := fenceDeadline(leaseRecord(t, dir))
	waitGone(t, w1, w2)
	for _, f := range []string{t1, t2} {
		if !waitQuiet(f) {
			t.Errorf("%s: still written after hold was killed", f)
		}
		if late := ticksAfter(readTicks(t, f), fence); len(late) > 0 {
			t.Errorf("%s: %d ticks after the fence deadline %s", f, len(late), fence.Format(time.RFC3339Nano))
		}
	}
	// Nothing released the lease: it stays until its TTL passes.
	if s := showJSONOf(t, u); s.Holder != "alpha" || s.State != "fresh" {
		t.Errorf("show after hold was killed: %+v", s)
	}
}

var _ = bytes.Equal

// TestWatchdogKilled: if the watchdog itself is killed, the kernel kills
// the command and everything it started (on Linux, the whole PID namespace
// whose init the watchdog is), and hold exits 1 saying so; nothing writes
// on, not even a process in a session of its own (setsid).
func TestWatchdogKilled(t *testing.T) {
	u, _ := fileURL(t)
	work := t.TempDir()
	ticks, pidFile := filepath.Join(work, "ticks"), filepath.Join(work, "pid")
	script := fmt.Sprintf(`setsid sh -c '%s' & wait`, tickWriter(ticks, pidFile))
	a := start(t, nil, "hold", u, "--ttl", "30s", "--instance-id", "alpha", "--", "sh", "-c", script)
	line := a.waitFor(`command-started\s+.*watched by pid \d+`)
	m := regexp.MustCompile(`watched by pid (\d+)`).FindStringSubmatch(line)
	watchdog, err := strconv.Atoi(m[1])
	if err != nil {
		t.Fatalf("no watchdog pid in %q", line)
	}
	waitTicks(t, ticks, 5)
	writer := pidFrom(t, pidFile)
	if err := syscall.Kill(watchdog, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	if code := a.wait(); code != exitcode.Failure {
		t.Errorf("hold exit %d, want %d", code, exitcode.Failure)
	}
	a.waitFor(`watchdog-died\s+the watchdog \(pid \d+\) died`)
	waitGone(t, writer)
	if !waitQuiet(ticks) {
		t.Fatal("the grandchild still writes after the watchdog was killed")
	}
	// Generous: the writer must stop long before the lease could be
	// taken over (30 s), not merely at some point.
	if late := ticksAfter(readTicks(t, ticks), killed.Add(10*time.Second)); len(late) > 0 {
		t.Errorf("%d ticks more than 10 s after the watchdog was killed", len(late))
	}
	if s := showJSONOf(t, u); s.State != "released" && s.State != "free" {
		t.Errorf("after hold exited, the lease is %+v", s)
	}
}

// startGroup is start with hold as the leader of a process group of its
// own, as a shell's job is, and returns the process and its group id.
func startGroup(t *testing.T, env []string, args ...string) (*proc, int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := launch(t, cmd, env, args)
	return p, p.cmd.Process.Pid
}

// groupKill is the scenario: hold's command starts a
// tick writer in a session of its own (setsid), then hold's whole process
// group is killed (kill -KILL -- -PGID, as "kill -9 %1" does in a shell).
// It returns the ticks written after the fence deadline and whether the
// writer went quiet; an escaped writer is killed before it returns.
func groupKill(t *testing.T, env []string, flags ...string) (late []time.Time, quiet bool) {
	t.Helper()
	u, dir := fileURL(t)
	work := t.TempDir()
	ticks, pidFile := filepath.Join(work, "ticks"), filepath.Join(work, "pid")
	script := fmt.Sprintf(`setsid sh -c '%s' & while :; do sleep 1; done`, tickWriter(ticks, pidFile))
	args := append(append([]string{"hold", u, "--ttl", "6s", "--instance-id", "alpha"}, flags...), "--", "sh", "-c", script)
	a, pgid := startGroup(t, env, args...)
	a.waitFor(`command-started`)
	waitTicks(t, ticks, 5)
	writer := pidFrom(t, pidFile)
	t.Cleanup(func() { _ = syscall.Kill(writer, syscall.SIGKILL) }) // runs before launch's clean-up
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pgid) // not a.wait(): an escaped writer keeps hold's stdout open
	fence := fenceDeadline(leaseRecord(t, dir))
	// Past the TTL, bounded: an escaped writer would still be writing.
	quiet = waitQuietWithin(ticks, max(time.Until(fence.Add(4*time.Second)), 3*time.Second))
	return ticksAfter(readTicks(t, ticks), fence), quiet
}

// TestWatchdogGroupKill: killing hold's whole process group (hold, the
// watchdog and the command at once) leaves nothing writing past the fence
// deadline, not even a process that called setsid: on Linux the kernel
// kills the watchdog's PID namespace with it. The mutant
// watchdog-shared-group (lab/mutate/mutants.txt) puts the watchdog back in
// hold's process group with no PID namespace, as before this fix; the
// writer then escapes, and this test finds it.
func TestWatchdogGroupKill(t *testing.T) {
	late, quiet := groupKill(t, nil)
	if !quiet {
		t.Fatal("the setsid writer still writes after hold's process group was killed")
	}
	if len(late) > 0 {
		t.Errorf("%d ticks after the fence deadline, the first at %s", len(late), late[0].Format(time.RFC3339Nano))
	}
}

// TestWatchdogGroupKillUnprivileged: TestWatchdogGroupKill for a user
// without CAP_SYS_ADMIN (run as nobody, when the tests run as root): the
// watchdog gets its PID namespace inside a new user namespace, and a kill
// of hold's process group still leaves nothing writing.
func TestWatchdogGroupKillUnprivileged(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run hold as nobody")
	}
	const nobody = 65534
	work, err := os.MkdirTemp("", "bucketlease-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(work) })
	bin, dir := filepath.Join(work, "bucketlease"), filepath.Join(work, "lease")
	data, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []error{os.Chmod(work, 0o777), os.WriteFile(bin, data, 0o755), os.Mkdir(dir, 0o777), os.Chmod(dir, 0o777)} {
		if step != nil {
			t.Fatal(step)
		}
	}
	ticks, pidFile := filepath.Join(work, "ticks"), filepath.Join(work, "pid")
	script := fmt.Sprintf(`setsid sh -c '%s' & while :; do sleep 1; done`, tickWriter(ticks, pidFile))
	args := []string{"hold", "file://" + dir, "--ttl", "6s", "--", "sh", "-c", script}
	cmd := exec.Command(bin, args...)
	cmd.Dir = work
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	a := launch(t, cmd, nil, args)
	line := a.waitFor(`command-started`)
	if !strings.Contains(line, "in a new user and PID namespace") {
		t.Logf("not in a user namespace here (%s); the test still checks the fallback", line)
	}
	waitTicks(t, ticks, 5)
	writer := pidFrom(t, pidFile)
	t.Cleanup(func() { _ = syscall.Kill(writer, syscall.SIGKILL) })
	if err := syscall.Kill(-a.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, a.cmd.Process.Pid)
	fence := fenceDeadline(leaseRecord(t, dir))
	if !waitQuietWithin(ticks, max(time.Until(fence.Add(4*time.Second)), 3*time.Second)) {
		t.Fatal("the setsid writer, run as nobody, still writes after hold's process group was killed")
	}
	if late := ticksAfter(readTicks(t, ticks), fence); len(late) > 0 {
		t.Errorf("%d ticks after the fence deadline", len(late))
	}
}

// TestPIDNamespaceOff pins what --pid-namespace=false is for: in the PID
// namespace a command cannot signal a process outside it (kill -0 fails);
// without one it can, and a kill of hold's process group still leaves
// nothing writing (the watchdog is in a session of its own; the mutant
// watchdog-session-shares-group leaves it in hold's process group).
func TestPIDNamespaceOff(t *testing.T) {
	outside := exec.Command("sleep", "60")
	if err := outside.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = outside.Process.Kill(); _ = outside.Wait() }()
	u, _ := fileURL(t)
	probe := fmt.Sprintf("kill -0 %d", outside.Process.Pid)
	if _, errOut, code := runCLI(t, nil, "hold", u, "--", "sh", "-c", probe); code == 0 {
		t.Errorf("in the PID namespace, the command could signal pid %d outside it:\n%s", outside.Process.Pid, errOut)
	}
	if _, errOut, code := runCLI(t, nil, "hold", u, "--pid-namespace=false", "--", "sh", "-c", probe); code != 0 || !strings.Contains(errOut, "in its own session") {
		t.Errorf("with --pid-namespace=false: exit %d\n%s", code, errOut)
	}
	late, quiet := groupKill(t, nil, "--pid-namespace=false")
	if !quiet || len(late) > 0 {
		t.Errorf("--pid-namespace=false, hold's group killed: quiet %v, %d ticks after the fence deadline", quiet, len(late))
	}
}
