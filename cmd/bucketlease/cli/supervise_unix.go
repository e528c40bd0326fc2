//go:build unix

package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mushroomdb/bucketlease/lease"
)

const sigQuit = syscall.SIGQUIT

// commandSupported: hold can run a command under its watchdog here.
const commandSupported = true

// sigName names a signal as kill -l does: SIGINT, SIGTERM.
func sigName(s os.Signal) string {
	if ss, ok := s.(syscall.Signal); ok {
		return signalName(ss)
	}
	return s.String()
}

// watchdogMargin is how much before the lease's fence deadline the
// watchdog kills the command: a tenth of the TTL, at most a second, for
// the time it takes to wake up and kill.
func watchdogMargin(ttl time.Duration) time.Duration { return min(ttl/10, time.Second) }

// watchdogDeadline converts the lease's fence deadline, less the margin,
// to CLOCK_MONOTONIC and wall-clock nanoseconds. The monotonic reading is
// taken first, so that a pause between the two readings can only make the
// deadline earlier.
func watchdogDeadline(l *lease.Lease) (mono, wall int64) {
	m := monoNow()
	fence := l.Deadline().Add(-watchdogMargin(l.TTL()))
	return m + int64(time.Until(fence)), fence.UnixNano()
}

// inheritedFiles lists the file descriptors hold received without
// close-on-exec (0, 1, 2 and any the caller opened for the command, such as
// 9>lockfile), so that the watchdog, and the command after it, get the
// same ones at the same numbers.
func inheritedFiles() []*os.File {
	files := []*os.File{os.Stdin, os.Stdout, os.Stderr}
	last := 2
	var more []*os.File
	for fd := 3; fd < 256; fd++ {
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err != nil || flags&unix.FD_CLOEXEC != 0 {
			more = append(more, nil)
			continue
		}
		f := os.NewFile(uintptr(fd), "inherited")
		keepInherited = append(keepInherited, f) // never closed by a finalizer
		more = append(more, f)
		last = fd
	}
	return append(files, more[:last-2]...)
}

// keepInherited keeps the files made for inherited descriptors reachable,
// so that no finalizer closes a descriptor hold does not own.
var keepInherited []*os.File

// superviseCommand runs argv (found at path) under the lease through the
// watchdog, passes signals on to it, stops it when the lease ends, and
// returns once it and everything it started are gone: nil or the
// command's exit status, or exit 124 if the lease ended under it.
func superviseCommand(e *env, l *lease.Lease, k *keeper, path string, argv []string, sigs <-chan os.Signal, gone <-chan string, grace time.Duration, pidNS bool, p *printer) error {
	if !l.MayWrite() { // ended, or fenced already: the command must not start
		if l.Err() == nil {
			return withCode(exitLeaseEnded, fmt.Errorf("the lease %s reached its fence deadline before the command could start", l.Key()))
		}
		return leaseEnded(l, p)
	}
	self := e.self
	if self == "" {
		var err error
		if self, err = os.Executable(); err != nil {
			return fmt.Errorf("cannot find this program to run its watchdog: %w", err)
		}
	}
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer ctlW.Close()
	repR, repW, err := os.Pipe()
	if err != nil {
		ctlR.Close()
		return err
	}
	defer repR.Close()
	files := inheritedFiles()
	ctlFD, repFD := len(files), len(files)+1
	files = append(files, ctlR, repW)
	mono, wall := watchdogDeadline(l)
	// Orphans of the watchdog's tree come to hold if the watchdog dies.
	subreaper := becomeSubreaper() == nil
	proc, mode, watchdogExited, err := startWatchdog(pidNS, self, watchdogArgs(ctlFD, repFD, grace, mono, wall, path, argv), &os.ProcAttr{
		Files: files,
		Env: append(os.Environ(), "BUCKETLEASE_KEY="+l.Key(), "BUCKETLEASE_INSTANCE_ID="+l.InstanceID(),
			"BUCKETLEASE_EPOCH="+strconv.FormatUint(l.Epoch(), 10)),
	})
	ctlR.Close()
	repW.Close()
	if err != nil {
		return fmt.Errorf("starting the watchdog (%s): %w", self, err)
	}

	reports := make(chan report, 16)
	go func() {
		defer close(reports)
		sc := bufio.NewScanner(repR)
		for sc.Scan() {
			if r, ok := parseReport(sc.Text()); ok {
				reports <- r
			}
		}
	}()
	send := func(format string, args ...any) { _, _ = fmt.Fprintf(ctlW, format+"\n", args...) }

	// Extend the watchdog's deadline after every renewal.
	stopExtending := make(chan struct{})
	extended := make(chan struct{})
	go func() {
		defer close(extended)
		tick := time.NewTicker(min(max(l.TTL()/30, 20*time.Millisecond), 250*time.Millisecond))
		defer tick.Stop()
		lastDeadline := l.Deadline()
		for {
			select {
			case <-stopExtending:
				return
			case <-l.Done():
				return
			case <-tick.C:
			}
			if d := l.Deadline(); !d.Equal(lastDeadline) && l.MayWrite() {
				lastDeadline = d
				m, w := watchdogDeadline(l)
				send("deadline %d %d", m, w)
			}
		}
	}()
	defer func() { close(stopExtending); <-extended }()

	var (
		pid       int
		status    = -1
		how       string
		ended     bool   // the lease ended under the command
		goneWhy   string // the lease object was deleted or replaced under it
		leaseEnd  = l.Done()
		stopAfter <-chan time.Time
		termKill  <-chan time.Time // --grace after hold got SIGTERM
	)
	for {
		// Reports already waiting come first: after hold was stopped, the
		// watchdog's account of what it did is older than the lease's end.
		var rep report
		ok, got := false, false
		select {
		case rep, ok = <-reports:
			got = true
		default:
		}
		if !got {
			select {
			case s := <-sigs:
				ss, _ := s.(syscall.Signal)
				if status >= 0 {
					p.note("signal", fmt.Sprintf("received %s; the command has ended, waiting for what it left running", sigName(s)), func(r *record) { r.Signal = sigName(s) })
					continue
				}
				if terminalDelivers(ss, mode.sharesGroup) {
					p.note("signal", fmt.Sprintf("received %s from the terminal, which sent it to pid %d too", sigName(s), pid), func(r *record) { r.Signal = sigName(s); r.PID = pid })
					continue
				}
				if ss == syscall.SIGTERM && termKill == nil {
					termKill = time.After(grace)
					p.note("signal", fmt.Sprintf("received %s; passing it on to pid %d; SIGKILL to it and everything it started in %v unless it has exited", sigName(s), pid, grace),
						func(r *record) { r.Signal = sigName(s); r.PID = pid })
				} else {
					if pid == 0 {
						// The watchdog has started the command (it reads
						// this only then) but its report is not read yet.
						p.note("signal", fmt.Sprintf("received %s; passing it on to the command", sigName(s)), func(r *record) { r.Signal = sigName(s) })
					} else {
						p.note("signal", fmt.Sprintf("received %s; passing it on to pid %d", sigName(s), pid), func(r *record) { r.Signal = sigName(s); r.PID = pid })
					}
				}
				send("signal %d", int(ss))
				continue
			case <-termKill:
				termKill = nil
				if status < 0 {
					send("kill still running %v after hold got SIGTERM", grace)
				}
				continue
			case why := <-gone:
				// Another instance may hold the lease already: no grace.
				gone, goneWhy, ended = nil, why, true
				p.note("lease-gone", why+": another instance may take the lease at once, so the command and everything it started are killed now (no grace)", func(r *record) { r.Key = l.Key(); r.PID = pid })
				send("kill the lease object was deleted or replaced")
				continue
			case <-leaseEnd:
				leaseEnd, ended = nil, true
				if errors.Is(l.Err(), lease.ErrLost) {
					// Taken from us (broken, taken over, overwritten):
					// another instance may hold the lease already, so
					// there is no grace.
					what := "the command and everything it started are"
					if status >= 0 {
						what = "whatever the command left running is"
					}
					p.note("stopping", "the lease was taken from this holder (broken, taken over or overwritten): another instance may hold it already, so "+what+" killed now (SIGKILL, no grace)",
						func(r *record) { r.PID = pid; r.Signal = "SIGKILL" })
					send("kill the lease was lost")
					continue
				}
				// What the watchdog already did (after hold was stopped,
				// say) is reported first: a moment for its reports.
				stopAfter = time.After(100 * time.Millisecond)
				continue
			case <-stopAfter:
				stopAfter = nil
				if status < 0 {
					p.note("stopping", fmt.Sprintf("the lease ended (%s): sending SIGTERM to the command and everything it started, SIGKILL in %v or at the fence deadline", endReason(l, p), grace),
						func(r *record) { r.PID = pid; r.Signal = "SIGTERM" })
				}
				send("stop %d", int64(grace)) // hurries what the command left behind, if it is gone
				continue
			case rep, ok = <-reports:
			}
		}
		f := rep.fields
		note := func(event, msg string, fill func(*record)) { p.noteAt(rep.at, event, msg, fill) }
		if !ok {
			<-watchdogExited
			if status >= 0 && how == "clean" {
				if goneWhy != "" {
					return withCode(exitLeaseEnded, fmt.Errorf("the lease %s ended while held: %s; the command was killed", l.Key(), goneWhy))
				}
				return commandResult(l, p, status, ended)
			}
			// The watchdog died: what it supervised is ours now.
			n := killOrphans(pid, subreaper)
			err := fmt.Errorf("the watchdog (pid %d) died; killed %d processes it supervised", proc.Pid, n)
			p.note("watchdog-died", err.Error(), func(r *record) { r.PID = proc.Pid })
			return err
		}
		arg := func(i int) string {
			if i < len(f) {
				return f[i]
			}
			return ""
		}
		switch f[0] {
		case "started":
			pid, _ = strconv.Atoi(arg(1))
			note("command-started", fmt.Sprintf("started %q (pid %d) under the lease, watched by pid %d %s", argv[0], pid, proc.Pid, mode.words),
				func(r *record) { r.PID = pid; r.Detail = mode.name })
		case "start-failed":
			code, _ := strconv.Atoi(arg(1))
			<-watchdogExited
			return withCode(code, fmt.Errorf("command %q could not be started: %s", argv[0], arg(2)))
		case "warning":
			note("warning", "watchdog: "+strings.Join(f[1:], " "), nil)
		case "stopped":
			n, _ := strconv.Atoi(arg(1))
			k.stop()
			note("command-stopped", fmt.Sprintf("pid %d was stopped (%s); the lease is not renewed while it is stopped: unless it continues, it is killed at the fence deadline, %s",
				pid, sigName(syscall.Signal(n)), utc(l.Deadline())), func(r *record) { r.PID = pid; r.Signal = sigName(syscall.Signal(n)) })
		case "continued":
			if l.MayWrite() {
				k.start()
				note("command-continued", fmt.Sprintf("pid %d continued; renewing the lease again", pid), func(r *record) { r.PID = pid })
			}
		case "exited":
			status, _ = strconv.Atoi(arg(1))
			code := status
			note("command-exited", fmt.Sprintf("%q (pid %d) %s", argv[0], pid, arg(2)), func(r *record) { r.PID = pid; r.Status = &code })
		case "leftover":
			note("stopping", fmt.Sprintf("sent SIGTERM to %s processes pid %d left running; SIGKILL in %v", arg(1), pid, grace),
				func(r *record) { r.PID = pid; r.Signal = "SIGTERM" })
		case "killed":
			note("killed", fmt.Sprintf("the watchdog sent SIGKILL to %s processes: %s", arg(1), arg(2)), func(r *record) { r.Signal = "SIGKILL"; r.Detail = arg(2) })
			if strings.Contains(arg(2), "fence deadline") {
				ended = true
			}
		case "clean":
			how = "clean"
		}
	}
}

// A report is one line from the watchdog: its fields, and when the
// watchdog wrote it.
type report struct {
	at     time.Time
	fields []string
}

// parseReport parses "@NS KIND [ARG [REST]]".
func parseReport(line string) (report, bool) {
	ts, rest, ok := strings.Cut(line, " ")
	if !ok || !strings.HasPrefix(ts, "@") {
		return report{}, false
	}
	ns, err := strconv.ParseInt(ts[1:], 10, 64)
	if err != nil {
		return report{}, false
	}
	return report{at: time.Unix(0, ns), fields: strings.SplitN(rest, " ", 3)}, true
}

// commandResult is what hold exits with once the command and everything
// it started are gone.
func commandResult(l *lease.Lease, p *printer, status int, ended bool) error {
	if l.Err() == nil && !l.MayWrite() {
		// Past the fence deadline (hold was stopped, say): the lease's
		// fence timer, due now, ends it and reports "fenced"; wait for
		// it so that the outcome does not depend on which came first.
		select {
		case <-l.Done():
		case <-time.After(time.Second):
		}
	}
	if ended || l.Err() != nil {
		if l.Err() == nil {
			return withCode(exitLeaseEnded, fmt.Errorf("the command was killed at the fence deadline of the lease %s: hold could not renew it in time", l.Key()))
		}
		return leaseEnded(l, p)
	}
	if status != 0 {
		return withCode(status, nil)
	}
	return nil
}

// killOrphans kills what is left of the command's tree after the watchdog
// died: on Linux every descendant of hold (a subreaper), elsewhere the
// command's process group. It reaps what it can and returns how many
// processes it signalled.
func killOrphans(cmdPid int, subreaper bool) int {
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

// A watchdogMode is one way of starting the watchdog: its name (for
// --json), its description, the process attributes, and whether the
// command ends up in hold's process group (and so under the terminal's job
// control).
type watchdogMode struct {
	name, words string
	sys         *syscall.SysProcAttr
	sharesGroup bool
}

// startWatchdog starts the watchdog in the first of watchdogModes(pidNS)
// that the system allows, and returns it, the mode, and a channel closed once it
// has exited and been reaped. The process is started and waited for by
// one goroutine locked to its OS thread: the kernel's PR_SET_PDEATHSIG
// fires when the thread that started a child exits, not the process, and
// that thread must live as long as the watchdog does.
func startWatchdog(pidNS bool, self string, args []string, attr *os.ProcAttr) (*os.Process, watchdogMode, <-chan struct{}, error) {
	type started struct {
		proc *os.Process
		mode watchdogMode
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
				errs = append(errs, fmt.Errorf("%s: %w", m.words, err))
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

// terminalDelivers reports whether s, an interrupt or quit, most likely
// came from the terminal to hold's whole process group, the command
// included: hold's group is the terminal's foreground group, and the
// command runs in it (commandInHoldsGroup).
func terminalDelivers(s syscall.Signal, commandInHoldsGroup bool) bool {
	if s != syscall.SIGINT && s != syscall.SIGQUIT || !commandInHoldsGroup {
		return false
	}
	fg, err := foregroundGroup()
	return err == nil && fg == syscall.Getpgrp()
}

// foregroundGroup returns the foreground process group of hold's
// controlling terminal.
func foregroundGroup() (int, error) {
	f, err := os.Open("/dev/tty")
	if err != nil {
		return 0, errNoTerminal
	}
	defer f.Close()
	return unix.IoctlGetInt(int(f.Fd()), unix.TIOCGPGRP)
}
