//go:build linux

package cli

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/exitcode"
	"golang.org/x/sys/unix"
)

// terminal is an interactive bash on a pseudo-terminal, with job control,
// as a user at a terminal has.
type terminal struct {
	t      *testing.T
	master *os.File
	cmd    *exec.Cmd
	mu     sync.Mutex
	out    bytes.Buffer
}

func newTerminal(t *testing.T) *terminal {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash for an interactive shell")
	}
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	tm := &terminal{t: t, master: m}
	tm.cmd = exec.Command("bash", "--norc", "--noprofile", "-i")
	tm.cmd.Env = append(cleanEnv(), "PS1=$ ", "TERM=dumb")
	tm.cmd.Stdin, tm.cmd.Stdout, tm.cmd.Stderr = s, s, s
	tm.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := tm.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for {
			n, err := m.Read(buf)
			tm.mu.Lock()
			tm.out.Write(buf[:n])
			tm.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-tm.cmd.Process.Pid, syscall.SIGKILL)
		_ = tm.cmd.Process.Kill()
		_ = tm.cmd.Wait()
		m.Close()
		<-done
		if t.Failed() {
			t.Logf("terminal:\n%s", tm.output())
		}
	})
	return tm
}

func (tm *terminal) output() string {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return tm.out.String()
}

func (tm *terminal) send(s string) {
	tm.t.Helper()
	if _, err := tm.master.Write([]byte(s)); err != nil {
		tm.t.Fatal(err)
	}
}

// waitFor waits until the terminal shows a match of re.
func (tm *terminal) waitFor(re string) string {
	tm.t.Helper()
	rx := regexp.MustCompile(re)
	for end := time.Now().Add(eventTimeout); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if m := rx.FindString(tm.output()); m != "" {
			return m
		}
	}
	tm.t.Fatalf("the terminal shows no %q within %v", re, eventTimeout)
	return ""
}

// TestCtrlZ: Ctrl-Z at a terminal stops hold and its command together;
// the watchdog, which the terminal does not stop, kills the command's tree
// at the fence deadline; another instance takes the lease over; "fg"
// brings back a hold that finds its lease ended and exits 124, and the
// command does not write again.
func TestCtrlZ(t *testing.T) {
	u, dir := fileURL(t)
	work := t.TempDir()
	ticks, pidFile, events := filepath.Join(work, "ticks"), filepath.Join(work, "pid"), filepath.Join(work, "events")
	tm := newTerminal(t)
	script := fmt.Sprintf(`sh -c '\''%s'\'' & wait`, tickWriter(ticks, pidFile))
	tm.send(fmt.Sprintf("%s hold %s --ttl 6s --instance-id alpha --events %s -- sh -c '%s'\n", binary, u, events, script))
	waitTicks(t, ticks, 5)
	writer := pidFrom(t, pidFile)

	tm.send("\x1a") // Ctrl-Z
	tm.waitFor(`Stopped`)
	fence := fenceDeadline(leaseRecord(t, dir))
	b := start(t, nil, "hold", u, "--ttl", "6s", "--instance-id", "beta", "--wait", "--json")
	b.waitFor(`"event":"took-over"`)
	waitGone(t, writer)
	if !waitQuiet(ticks) {
		t.Fatal("the command still writes after the lease was taken over")
	}
	n := len(readTicks(t, ticks))
	if late := ticksAfter(readTicks(t, ticks), fence); len(late) > 0 {
		t.Errorf("%d ticks after the fence deadline %s", len(late), fence.Format(time.RFC3339Nano))
	}

	tm.send("fg; echo HOLD-EXIT=$?\n")
	tm.waitFor(`HOLD-EXIT=\d+`)
	if m := tm.waitFor(`HOLD-EXIT=\d+`); m != fmt.Sprintf("HOLD-EXIT=%d", exitcode.LeaseEnded) {
		t.Errorf("hold after fg: %s, want %d", m, exitcode.LeaseEnded)
	}
	if waitQuiet(ticks); len(readTicks(t, ticks)) != n {
		t.Error("the command wrote again after fg")
	}
	if s := showJSONOf(t, u); s.Holder != "beta" || s.State != "fresh" {
		t.Errorf("show: %+v", s)
	}
	ev, _ := os.ReadFile(events)
	if !strings.Contains(string(ev), "fence deadline") {
		t.Errorf("the events do not say the watchdog killed the command at the fence deadline:\n%s", ev)
	}
	b.signal(syscall.SIGTERM)
	b.wait()
}

// TestStoppedCommandDoesNotHoldTheLease: a command that is stopped (here
// it stops itself; at a terminal, reading it from the background does)
// does not keep the lease: hold stops renewing it, the watchdog kills the
// command at the fence deadline, and hold exits 124 with the lease
// released. The command never runs on.
func TestStoppedCommandDoesNotHoldTheLease(t *testing.T) {
	u, _ := fileURL(t)
	a := start(t, nil, "hold", u, "--ttl", "3s", "--instance-id", "alpha", "--", "sh", "-c", `echo stopping myself; kill -STOP $$; echo resumed`)
	a.waitFor(`command-stopped\s+pid \d+ was stopped \(SIGSTOP\)`)
	a.waitFor(`killed\s+.*fence deadline`)
	if code := a.wait(); code != exitcode.LeaseEnded {
		t.Errorf("exit %d, want %d", code, exitcode.LeaseEnded)
	}
	if strings.Contains(a.output(), "resumed") {
		t.Error("the command ran on after the fence")
	}
	if s := showJSONOf(t, u); s.State == "fresh" {
		t.Errorf("the lease is still held: %+v", s)
	}
}

// TestInterruptStoppedCommand: Ctrl-C (SIGINT to hold) reaches a stopped
// command, which is continued to receive it, so hold does not hang.
func TestInterruptStoppedCommand(t *testing.T) {
	u, _ := fileURL(t)
	a := start(t, nil, "hold", u, "--ttl", "30s", "--", "sh", "-c", `kill -STOP $$; echo resumed`)
	a.waitFor(`command-stopped`)
	a.signal(syscall.SIGINT)
	if code := a.wait(); code != 128+int(syscall.SIGINT) {
		t.Errorf("exit %d, want %d (the command killed by SIGINT)", code, 128+int(syscall.SIGINT))
	}
	if strings.Contains(a.output(), "resumed") {
		t.Error("the command ran on instead of getting SIGINT")
	}
}

// TestLeftBehindKilledBeforeRelease: a process the command leaves behind,
// ignoring SIGTERM, is killed after --grace, and only then is the lease
// released.
func TestLeftBehindKilledBeforeRelease(t *testing.T) {
	u, _ := fileURL(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	script := fmt.Sprintf(`sh -c 'trap "" TERM; %s > %s; exec sleep 1003' & while [ ! -s %s ]; do sleep 0.01; done; exit 0`, echoPID, pidFile, pidFile)
	a := start(t, nil, "hold", u, "--grace", "1s", "--", "sh", "-c", script)
	left := pidFrom(t, pidFile)
	if code := a.wait(); code != 0 {
		t.Errorf("exit %d", code)
	}
	if alive(left) {
		t.Errorf("pid %d, left behind ignoring SIGTERM, outlived hold", left)
		_ = syscall.Kill(left, syscall.SIGKILL)
	}
	out := a.output()
	k, r := strings.Index(out, "still running 1s after SIGTERM"), strings.Index(out, "released lease LEASE")
	if k < 0 || r < 0 || k > r {
		t.Errorf("want the SIGKILL reported before the release:\n%s", out)
	}
}

// TestNohup: under nohup, SIGHUP stays ignored by hold and by its command.
// Without nohup (the negative control), the same SIGHUP ends the command.
func TestNohup(t *testing.T) {
	// A test run under nohup itself would start every hold with SIGHUP
	// ignored, and "without nohup" could not be seen; a signal this process
	// handles is reset to its default in the processes it starts.
	if signal.Ignored(syscall.SIGHUP) {
		signal.Notify(make(chan os.Signal, 1), syscall.SIGHUP)
		defer signal.Reset(syscall.SIGHUP)
	}
	for _, nohup := range []bool{true, false} {
		u, _ := fileURL(t)
		flag := filepath.Join(t.TempDir(), "go")
		script := fmt.Sprintf(`echo ready; while [ ! -e %s ]; do sleep 0.05; done; kill -HUP $$; echo survived`, flag)
		args := []string{"hold", u, "--", "sh", "-c", script}
		var a *proc
		if nohup {
			a = startProg(t, nil, "nohup", append([]string{binary}, args...)...)
		} else {
			a = start(t, nil, args...)
		}
		a.waitFor(`ready`)
		a.signal(syscall.SIGHUP)
		time.Sleep(100 * time.Millisecond)
		if err := os.WriteFile(flag, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		code := a.wait()
		survived := strings.Contains(a.output(), "survived")
		switch {
		case nohup && (code != 0 || !survived):
			t.Errorf("under nohup: exit %d, survived %v; want 0 and the command to ignore SIGHUP", code, survived)
		case !nohup && (code != 128+int(syscall.SIGHUP) || survived):
			t.Errorf("without nohup: exit %d, survived %v; want %d", code, survived, 128+int(syscall.SIGHUP))
		}
	}
}

// TestClosedStderrAndSIGQUIT: hold whose stderr is a closed pipe goes on
// holding (and renewing) the lease; SIGQUIT releases it like SIGTERM, with
// exit 0 and no goroutine dump.
func TestClosedStderrAndSIGQUIT(t *testing.T) {
	u, _ := fileURL(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	// A TTL of 6s, not 3s: with stderr closed nothing tells why a hold
	// ended, and on a loaded machine a 3s lease can fence (a renewal
	// starved for over a second), which is not what this test is about.
	cmd := exec.Command(binary, "hold", u, "-v", "--ttl", "6s", "--instance-id", "alpha")
	cmd.Env = cleanEnv()
	cmd.Stderr = w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	// Two renewals: each is reported on the closed stderr.
	first := ""
	renewals := 0
	for end := time.Now().Add(eventTimeout); renewals < 2 && time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		select {
		case err := <-exited:
			t.Fatalf("hold exited (%v) with its stderr closed", err)
		default:
		}
		s := showJSONOf(t, u)
		if s.Holder == "alpha" && s.RenewedAt != first {
			if first != "" {
				renewals++
			}
			first = s.RenewedAt
		}
	}
	if renewals < 2 {
		t.Fatalf("no two renewals within %v", eventTimeout)
	}
	if err := cmd.Process.Signal(syscall.SIGQUIT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("after SIGQUIT: %v, want exit 0", err)
		}
	case <-time.After(exitTimeout):
		t.Fatal("hold did not exit after SIGQUIT")
	}
	if s := showJSONOf(t, u); s.State != "released" && s.State != "free" {
		t.Errorf("after SIGQUIT the lease is %+v", s)
	}
}

// TestFullStderrDoesNotStopRenewals: hold's stderr is a pipe that is full
// and nobody reads. Its events wait (or are dropped); the lease is still
// taken and renewed, and SIGTERM still releases it.
func TestFullStderrDoesNotStopRenewals(t *testing.T) {
	u, _ := fileURL(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fd := int(w.Fd())
	if err := syscall.SetNonblock(fd, true); err != nil {
		t.Fatal(err)
	}
	chunk := bytes.Repeat([]byte("x"), 4096)
	for range 1 << 16 { // until the pipe is full
		if _, err := syscall.Write(fd, chunk); err != nil {
			break
		}
	}
	if err := syscall.SetNonblock(fd, false); err != nil {
		t.Fatal(err)
	}
	// A TTL of 6s, not 3s: with stderr closed nothing tells why a hold
	// ended, and on a loaded machine a 3s lease can fence (a renewal
	// starved for over a second), which is not what this test is about.
	cmd := exec.Command(binary, "hold", u, "-v", "--ttl", "6s", "--instance-id", "alpha")
	cmd.Env = cleanEnv()
	cmd.Stderr = w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	first, renewals := "", 0
	for end := time.Now().Add(eventTimeout); renewals < 2 && time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		s := showJSONOf(t, u)
		if s.Holder == "alpha" && s.State == "fresh" && s.RenewedAt != first {
			if first != "" {
				renewals++
			}
			first = s.RenewedAt
		}
	}
	if renewals < 2 {
		t.Fatalf("no two renewals within %v with stderr full", eventTimeout)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("after SIGTERM: %v", err)
		}
	case <-time.After(exitTimeout):
		t.Fatal("hold did not exit after SIGTERM with its stderr full")
	}
	if s := showJSONOf(t, u); s.State != "released" && s.State != "free" {
		t.Errorf("after SIGTERM the lease is %+v", s)
	}
}

// TestCtrlCAtTerminal: Ctrl-C at a terminal reaches the command once, from
// the terminal (hold does not pass on what the terminal already sent); the
// command decides, and hold exits with its status and releases the lease.
func TestCtrlCAtTerminal(t *testing.T) {
	u, _ := fileURL(t)
	work := t.TempDir()
	events, counts := filepath.Join(work, "events"), filepath.Join(work, "counts")
	tm := newTerminal(t)
	script := fmt.Sprintf(`trap "echo INT >> %s" INT; echo RE""ADY; while [ ! -s %s ]; do sleep 0.1; done; sleep 2; exit 0`, counts, counts)
	tm.send(fmt.Sprintf("%s hold %s --ttl 30s --events %s -- sh -c '%s'; echo HOLD-EXIT=$?\n", binary, u, events, script))
	tm.waitFor(`READY`)
	tm.send("\x03") // Ctrl-C
	tm.waitFor(`HOLD-EXIT=\d+`)
	if m := tm.waitFor(`HOLD-EXIT=\d+`); m != "HOLD-EXIT=0" {
		t.Errorf("hold after Ctrl-C: %s, want 0 (the command trapped SIGINT and exited 0)", m)
	}
	b, _ := os.ReadFile(counts)
	if n := strings.Count(string(b), "INT"); n != 1 {
		t.Errorf("the command got SIGINT %d times, want once", n)
	}
	ev, _ := os.ReadFile(events)
	if !strings.Contains(string(ev), "from the terminal") || !strings.Contains(string(ev), "released lease LEASE") {
		t.Errorf("events:\n%s", ev)
	}
}

// TestKillJobAtTerminal is the kill of hold's job exactly as a user reported it, in a
// real interactive shell: hold runs as a background job (&) whose command
// starts a setsid tick writer, and "kill -9 %1" kills the job's whole
// process group, hold and the watchdog included. The writer must not
// outlive the fence: on Linux the kernel kills the watchdog's PID
// namespace with it.
func TestKillJobAtTerminal(t *testing.T) {
	u, dir := fileURL(t)
	work := t.TempDir()
	ticks, pidFile := filepath.Join(work, "ticks"), filepath.Join(work, "pid")
	tm := newTerminal(t)
	script := fmt.Sprintf(`setsid sh -c '\''%s'\'' & while :; do sleep 1; done`, tickWriter(ticks, pidFile))
	tm.send(fmt.Sprintf("%s hold %s --ttl 6s --instance-id alpha --events %s -- sh -c '%s' &\n", binary, u, filepath.Join(work, "events"), script))
	waitTicks(t, ticks, 5)
	writer := pidFrom(t, pidFile)
	t.Cleanup(func() { _ = syscall.Kill(writer, syscall.SIGKILL) })
	tm.send("kill -9 %1; wait; echo KILLED-JOB\n")
	tm.waitFor(`KILLED-JOB`)
	fence := fenceDeadline(leaseRecord(t, dir))
	if !waitQuietWithin(ticks, max(time.Until(fence.Add(4*time.Second)), 3*time.Second)) {
		t.Fatal("the setsid writer still writes after kill -9 %1")
	}
	waitGone(t, writer)
	if late := ticksAfter(readTicks(t, ticks), fence); len(late) > 0 {
		t.Errorf("%d ticks after the fence deadline %s", len(late), fence.Format(time.RFC3339Nano))
	}
}
