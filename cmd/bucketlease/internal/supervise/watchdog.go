//go:build unix

package supervise

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// WatchdogName is the hidden subcommand that hold runs as its watchdog. It
// is not listed in the help: only hold starts it.
const WatchdogName = "__watchdog"

// The watchdog sits between hold and its command (hold ── watchdog ──
// COMMAND ── …) and only enforces the deadline hold keeps extending: when it
// passes, or hold's end of the control pipe closes, it kills the command
// and every process below it. It ignores the terminal's stop and interrupt
// signals, so Ctrl-Z stops hold and the command but not it.
//
// Control messages, one per line (times in ns):
//
//	deadline MONO WALL   kill all once CLOCK_MONOTONIC reaches MONO or the wall clock WALL
//	signal N             pass signal N on to the command (and SIGCONT if stopped)
//	stop GRACE           SIGTERM to all, SIGKILL after GRACE (or at the deadline)
//	kill [REASON]        SIGKILL to all now
//
// Reports, each after "@NS " (when it happened, ns since the epoch, so hold
// reports it right even if hold was stopped meanwhile):
//
//	started PID | start-failed CODE MESSAGE | warning MESSAGE
//	stopped SIGNAL | continued | exited CODE DESCRIPTION
//	leftover N | killed N REASON   N processes sent SIGTERM / SIGKILL
//	clean                          nothing is left running; the watchdog exits

// WatchdogArgs is how hold starts the watchdog.
func WatchdogArgs(ctlFD, repFD int, grace time.Duration, monoDeadline, wallDeadline int64, path string, argv []string) []string {
	return append([]string{"bucketlease", WatchdogName, strconv.Itoa(ctlFD), strconv.Itoa(repFD),
		strconv.FormatInt(int64(grace), 10), strconv.FormatInt(monoDeadline, 10), strconv.FormatInt(wallDeadline, 10),
		"--", path}, argv...)
}

// watchdog is the state of the watchdog process.
type watchdog struct {
	rep          *os.File
	cmdPid       int
	cmdStopped   bool
	cmdDone      bool
	monoDeadline int64
	wallDeadline int64
	grace        time.Duration
	killAt       time.Time // when to send SIGKILL after a SIGTERM; zero if none
	killing      bool      // set once killAll stops everything: no more stop reports
}

// RunWatchdog runs the watchdog on the arguments after its name.
func RunWatchdog(args []string) int {
	if len(args) < 8 || args[5] != "--" {
		fmt.Fprintln(os.Stderr, "bucketlease: the watchdog is started by \"bucketlease hold URL -- COMMAND\", not by hand")
		return exitUsage
	}
	var nums [5]int64
	for i := range nums {
		n, err := strconv.ParseInt(args[i], 10, 64)
		if err != nil {
			fmt.Fprintf(os.Stderr, "bucketlease watchdog: argument %d %q: %v\n", i+1, args[i], err)
			return exitUsage
		}
		nums[i] = n
	}
	ctlFD, repFD := int(nums[0]), int(nums[1])
	// Neither pipe may leak into the command: hold must see the report
	// pipe close when the watchdog dies.
	unix.CloseOnExec(ctlFD)
	unix.CloseOnExec(repFD)
	ctl, rep := os.NewFile(uintptr(ctlFD), "control"), os.NewFile(uintptr(repFD), "report")
	w := &watchdog{rep: rep, grace: time.Duration(nums[2]), monoDeadline: nums[3], wallDeadline: nums[4]}
	sigs := watchdogSignals()
	chld := make(chan os.Signal, 1)
	signal.Notify(chld, syscall.SIGCHLD)
	if err := BecomeSubreaper(); err != nil {
		w.report("warning %s", oneLine(err.Error()))
	}
	if !w.start(args[6], args[7:]) {
		return exitError
	}
	lines := make(chan string, 16)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(ctl)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	return w.supervise(lines, chld, sigs)
}

// watchdogSignals catches the terminal's signals, which reach the watchdog
// in hold's group; it acts only on hold's messages. Catching rather than
// ignoring leaves the command its default disposition.
func watchdogSignals() <-chan os.Signal {
	sigs := make(chan os.Signal, 8)
	for _, s := range []syscall.Signal{syscall.SIGINT, syscall.SIGQUIT, syscall.SIGHUP, syscall.SIGTERM,
		syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU, syscall.SIGPIPE} {
		if !signal.Ignored(s) {
			signal.Notify(sigs, s)
		}
	}
	return sigs
}

// start starts argv at path and reports it started, or why not (exit 126,
// 127 if missing) and returns false.
func (w *watchdog) start(path string, argv []string) bool {
	cmd := exec.Command(path)
	cmd.Args = argv
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = commandAttr()
	if err := cmd.Start(); err != nil {
		code := 126
		if errors.Is(err, fs.ErrNotExist) {
			code = 127
		}
		w.report("start-failed %d %s", code, oneLine(err.Error()))
		return false
	}
	w.cmdPid = cmd.Process.Pid
	w.report("started %d", hostPID(w.cmdPid))
	return true
}

// supervise reaps, kills at the deadline and after the grace, and acts on
// hold's lines until the command's tree is gone (0) or hold is (1).
func (w *watchdog) supervise(lines <-chan string, chld, sigs <-chan os.Signal) int {
	timer := time.NewTimer(0)
	defer timer.Stop()
	leftoverSent := false
	for {
		w.reap()
		if w.pastDeadline() {
			w.killAll("the fence deadline passed")
			w.monoDeadline, w.wallDeadline = -1, -1 // reported once
		}
		if !w.killAt.IsZero() && !time.Now().Before(w.killAt) {
			w.killAt = time.Time{}
			w.killAll(fmt.Sprintf("still running %v after SIGTERM", w.grace))
		}
		if w.cmdDone {
			if !leftoverSent {
				leftoverSent = true
				if n := signalTree(w.cmdPid, syscall.SIGTERM); n > 0 {
					signalTree(w.cmdPid, syscall.SIGCONT)
					w.report("leftover %d", n)
					w.setKillAt(w.grace)
				}
			}
			if signalTree(w.cmdPid, 0) == 0 {
				w.report("clean")
				return exitOK
			}
		}
		timer.Reset(w.nextWake())
		select {
		case line, ok := <-lines:
			if !ok { // hold is gone: nobody renews the lease
				w.killAll("hold exited or died")
				w.drain(5 * time.Second)
				return exitError
			}
			w.handle(line)
		case <-chld:
		case <-sigs:
		case <-timer.C:
		}
	}
}

// report sends one line to hold. A failure means hold is gone, which the
// control pipe reports too.
func (w *watchdog) report(format string, args ...any) {
	_, _ = fmt.Fprintf(w.rep, "@%d "+format+"\n", append([]any{time.Now().UnixNano()}, args...)...)
}

// handle acts on one message from hold.
func (w *watchdog) handle(line string) {
	f := strings.Fields(line)
	if len(f) == 0 {
		return
	}
	switch {
	case f[0] == "deadline" && len(f) == 3:
		m, err1 := strconv.ParseInt(f[1], 10, 64)
		wl, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 == nil && err2 == nil && w.monoDeadline >= 0 {
			w.monoDeadline, w.wallDeadline = m, wl
		}
	case f[0] == "signal" && len(f) == 2:
		n, err := strconv.Atoi(f[1])
		if err == nil && !w.cmdDone {
			_ = syscall.Kill(w.cmdPid, syscall.Signal(n))
			if w.cmdStopped {
				_ = syscall.Kill(w.cmdPid, syscall.SIGCONT)
			}
		}
	case f[0] == "stop" && len(f) == 2:
		g, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			g = 0
		}
		signalTree(w.cmdPid, syscall.SIGTERM)
		signalTree(w.cmdPid, syscall.SIGCONT)
		w.setKillAt(time.Duration(g))
	case f[0] == "kill":
		reason := "hold asked"
		if len(f) > 1 {
			reason = strings.Join(f[1:], " ")
		}
		w.killAll(reason)
	default:
		w.report("warning unknown message %q", line)
	}
}

func (w *watchdog) setKillAt(grace time.Duration) {
	at := time.Now().Add(grace)
	if w.killAt.IsZero() || at.Before(w.killAt) {
		w.killAt = at
	}
}

// pastDeadline reports whether the deadline has passed on either clock.
func (w *watchdog) pastDeadline() bool {
	if w.monoDeadline < 0 {
		return false
	}
	return MonoNow() >= w.monoDeadline || time.Now().UnixNano() >= w.wallDeadline
}

// nextWake is how long the loop may sleep: until the deadline or a pending
// SIGKILL, at most 100 ms so a wall-clock step is noticed.
func (w *watchdog) nextWake() time.Duration {
	d := 100 * time.Millisecond
	if w.monoDeadline >= 0 {
		d = min(d, time.Duration(w.monoDeadline-MonoNow()), time.Duration(w.wallDeadline-time.Now().UnixNano()))
	}
	if !w.killAt.IsZero() {
		d = min(d, time.Until(w.killAt))
	}
	return max(d, 0)
}

// killAll stops every process below the watchdog (so that none can fork
// any more), then kills them, and reports how many it killed.
func (w *watchdog) killAll(reason string) {
	w.killing = true
	n := 0
	for range 50 { // until no new process appears between two rounds
		m := signalTree(w.cmdPid, syscall.SIGSTOP)
		if m == n {
			break
		}
		n = m
	}
	n = signalTree(w.cmdPid, syscall.SIGKILL)
	if n > 0 {
		w.report("killed %d %s", n, reason)
	}
	w.drain(5 * time.Second)
}

// drain reaps until nothing is left running below the watchdog, for at most d.
func (w *watchdog) drain(d time.Duration) {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		w.reap()
		if signalTree(w.cmdPid, 0) == 0 && w.cmdDone {
			return
		}
		signalTree(w.cmdPid, syscall.SIGKILL)
		time.Sleep(10 * time.Millisecond)
	}
}

// reap reaps every changed child, reporting the command's own changes.
func (w *watchdog) reap() {
	for range 10000 {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG|syscall.WUNTRACED|unix.WCONTINUED, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || pid <= 0 {
			return
		}
		if pid != w.cmdPid || w.cmdDone {
			continue
		}
		switch {
		case ws.Stopped():
			w.cmdStopped = true
			if !w.killing { // killAll's own SIGSTOP is not news
				w.report("stopped %d", int(ws.StopSignal()))
			}
		case ws.Continued():
			w.cmdStopped = false
			if !w.killing {
				w.report("continued")
			}
		case ws.Exited():
			w.cmdDone = true
			w.report("exited %d exited with status %d", ws.ExitStatus(), ws.ExitStatus())
		case ws.Signaled():
			w.cmdDone = true
			w.report("exited %d was killed by signal %s", 128+int(ws.Signal()), SignalName(ws.Signal()))
		}
	}
}

// SignalName names a signal as kill -l does: SIGKILL, SIGTERM.
func SignalName(s os.Signal) string {
	ss, ok := s.(syscall.Signal)
	if !ok {
		return s.String()
	}
	if n := unix.SignalName(ss); n != "" {
		return n
	}
	return "signal " + strconv.Itoa(int(ss))
}

// KillOrphans kills what the command left after the watchdog died (hold's
// descendants on Linux, else its group) and returns how many it signalled.
func KillOrphans(cmdPid int, subreaper bool) int {
	n := 0
	for range 50 {
		var m int
		if subreaper {
			for _, p := range descendants(os.Getpid()) {
				if syscall.Kill(p, syscall.SIGKILL) == nil {
					m++
				}
			}
		} else if cmdPid > 0 && syscall.Kill(-cmdPid, syscall.SIGKILL) == nil {
			m = 1
		}
		for range 1000 {
			var ws syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); err != nil || pid <= 0 {
				break
			}
		}
		if m == 0 {
			break
		}
		n = max(n, m)
		time.Sleep(10 * time.Millisecond)
	}
	return n
}

// A Mode is one way of starting the watchdog.
type Mode struct {
	Name, Words string
	sys         *syscall.SysProcAttr
	SharesGroup bool
}

// StartWatchdog starts the watchdog in the first of watchdogModes(pidNS)
// the system allows, and returns it, the mode, and a channel closed once it
// is reaped. One goroutine locked to its OS thread starts and waits for it:
// PR_SET_PDEATHSIG fires when the starting thread exits, not the process.
func StartWatchdog(pidNS bool, self string, args []string, attr *os.ProcAttr) (*os.Process, Mode, <-chan struct{}, error) {
	type started struct {
		proc *os.Process
		mode Mode
		err  error
	}
	res := make(chan started, 1)
	exited := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		var errs []error
		for _, m := range watchdogModes(pidNS) {
			a := *attr
			a.Sys = m.sys
			proc, err := os.StartProcess(self, args, &a)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", m.Words, err))
				if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.ENOEXEC) {
					break // the program itself cannot run: no other mode helps
				}
				continue
			}
			res <- started{proc: proc, mode: m}
			_, _ = proc.Wait()
			close(exited)
			return
		}
		res <- started{err: errors.Join(errs...)}
	}()
	r := <-res
	return r.proc, r.mode, exited, r.err
}

// errNoTerminal is returned when hold has no controlling terminal.
var errNoTerminal = errors.New("no controlling terminal")

// TerminalDelivers reports whether s most likely came from the terminal to
// hold's foreground group with the command in it.
func TerminalDelivers(s syscall.Signal, commandInHoldsGroup bool) bool {
	if s != syscall.SIGINT && s != syscall.SIGQUIT || !commandInHoldsGroup {
		return false
	}
	fg, err := foregroundGroup()
	return err == nil && fg == syscall.Getpgrp()
}

// foregroundGroup returns hold's controlling terminal's foreground group.
func foregroundGroup() (int, error) {
	f, err := os.Open("/dev/tty")
	if err != nil {
		return 0, errNoTerminal
	}
	defer f.Close()
	return unix.IoctlGetInt(int(f.Fd()), unix.TIOCGPGRP)
}
