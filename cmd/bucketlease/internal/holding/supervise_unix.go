//go:build unix

package holding

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/exitcode"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/report"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/supervise"
	"github.com/mushroomdb/bucketlease/internal/leaseseam"
	"github.com/mushroomdb/bucketlease/lease"
)

// SigQuit is SIGQUIT, one of the signals hold passes on.
const SigQuit = syscall.SIGQUIT

// CommandSupported: hold can run a command under its watchdog here.
const CommandSupported = true

// watchdogMargin is how early, before the fence deadline, the watchdog kills
// the command: a tenth of the TTL, at most a second.
func watchdogMargin(ttl time.Duration) time.Duration { return min(ttl/10, time.Second) }

// watchdogDeadline converts the fence deadline less the margin to
// CLOCK_MONOTONIC and wall ns, reading monotonic first so a pause between
// the readings can only make the deadline earlier.
func watchdogDeadline(l *lease.Lease) (mono, wall int64) {
	m := supervise.MonoNow()
	fence := l.Deadline().Add(-watchdogMargin(leaseseam.Inside(l).TTL))
	return m + int64(time.Until(fence)), fence.UnixNano()
}

// A Command is what hold runs under the lease through the watchdog: argv,
// found at Path, killed after Grace once asked to stop.
type Command struct {
	Self         string // this program, which runs as the watchdog; "" finds it
	Path         string
	Argv         []string
	Grace        time.Duration
	PIDNamespace bool   // run the watchdog in a PID namespace where allowed
	Pause        func() // stops renewing the lease: the command is stopped
	Resume       func() // renews it again: the command continued
}

// Run runs the command under l through the watchdog, passes sigs on, stops
// it when the lease ends or gone fires, and returns once all it started is
// gone: the command's exit status, or exit 124 if the lease ended under it.
func (c *Command) Run(l *lease.Lease, sigs <-chan os.Signal, gone <-chan string, p *report.Printer) error {
	if !l.MayWrite() { // ended, or fenced already: the command must not start
		if l.Err() == nil {
			return exitcode.With(exitcode.LeaseEnded, fmt.Errorf("the lease %s reached its fence deadline before the command could start", l.Key()))
		}
		return leaseEnded(l, p)
	}
	self := c.Self
	if self == "" {
		var err error
		if self, err = os.Executable(); err != nil {
			return fmt.Errorf("cannot find this program to run its watchdog: %w", err)
		}
	}
	sv := &supervisor{l: l, c: c, p: p, argv: c.Argv, grace: c.Grace, status: -1, gone: gone}
	repR, err := sv.launch(self, c.Path, c.PIDNamespace)
	if err != nil {
		return err
	}
	defer sv.ctl.Close()
	defer repR.Close()
	reports := supervise.ReadReports(repR)
	stopExtending := sv.extendDeadline()
	defer stopExtending()
	sv.leaseEnd = l.Done()
	return sv.run(sigs, reports)
}

// A supervisor is hold's side of a command run under the watchdog.
type supervisor struct {
	l     *lease.Lease
	c     *Command
	p     *report.Printer
	argv  []string
	grace time.Duration
	ctl   *os.File // hold's messages to the watchdog

	proc      *os.Process
	mode      supervise.Mode
	exited    <-chan struct{} // closed once the watchdog has exited and been reaped
	subreaper bool            // orphans of the watchdog's tree come to hold

	pid       int
	status    int    // the command's exit status; -1 until it exits
	how       string // "clean" once the command and everything it started are gone
	ended     bool   // the lease ended under the command
	goneWhy   string // the lease object was deleted or replaced under it
	gone      <-chan string
	leaseEnd  <-chan struct{}
	stopAfter <-chan time.Time
	termKill  <-chan time.Time // --grace after hold got SIGTERM
}

// launch starts the watchdog (self), which starts the command at path
// with the lease's fence deadline and variables, and returns the reading
// end of the report pipe.
func (sv *supervisor) launch(self, path string, pidNS bool) (*os.File, error) {
	l := sv.l
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		ctlR.Close()
		ctlW.Close()
		return nil, err
	}
	files := supervise.InheritedFiles()
	ctlFD, repFD := len(files), len(files)+1
	files = append(files, ctlR, repW)
	mono, wall := watchdogDeadline(l)
	// Orphans of the watchdog's tree come to hold if the watchdog dies.
	sv.subreaper = supervise.BecomeSubreaper() == nil
	sv.proc, sv.mode, sv.exited, err = supervise.StartWatchdog(pidNS, self, supervise.WatchdogArgs(ctlFD, repFD, sv.grace, mono, wall, path, sv.argv), &os.ProcAttr{
		Files: files,
		Env: append(os.Environ(), "BUCKETLEASE_KEY="+l.Key(), "BUCKETLEASE_INSTANCE_ID="+l.InstanceID(),
			"BUCKETLEASE_EPOCH="+strconv.FormatUint(l.Epoch(), 10)),
	})
	ctlR.Close()
	repW.Close()
	if err != nil {
		ctlW.Close()
		repR.Close()
		return nil, fmt.Errorf("starting the watchdog (%s): %w", self, err)
	}
	sv.ctl = ctlW
	return repR, nil
}

// send sends the watchdog one message.
func (sv *supervisor) send(format string, args ...any) {
	_, _ = fmt.Fprintf(sv.ctl, format+"\n", args...)
}

// extendDeadline extends the watchdog's deadline after every renewal until
// the lease ends or stop is called; stop returns once it has stopped.
func (sv *supervisor) extendDeadline() (stop func()) {
	l := sv.l
	stopExtending := make(chan struct{})
	extended := make(chan struct{})
	go func() {
		defer close(extended)
		tick := time.NewTicker(min(max(leaseseam.Inside(l).TTL/30, 20*time.Millisecond), 250*time.Millisecond))
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
				sv.send("deadline %d %d", m, w)
			}
		}
	}()
	return func() { close(stopExtending); <-extended }
}

// run acts on signals, the lease's end and reports until the command's tree
// or the watchdog is gone, and returns hold's outcome.
func (sv *supervisor) run(sigs <-chan os.Signal, reports <-chan supervise.Report) error {
	for {
		// Reports already waiting come first: after hold was stopped, the
		// watchdog's account of what it did is older than the lease's end.
		var rep supervise.Report
		ok, got := false, false
		select {
		case rep, ok = <-reports:
			got = true
		default:
		}
		if !got {
			if rep, ok, got = sv.wait(sigs, reports); !got {
				continue
			}
		}
		if !ok {
			return sv.finish()
		}
		if done, err := sv.onReport(rep); done {
			return err
		}
	}
}

// wait waits for a signal, a timer, the lease's end or loss, or a report;
// it acts on all but a report, which it returns (ok false once reports end).
func (sv *supervisor) wait(sigs <-chan os.Signal, reports <-chan supervise.Report) (rep supervise.Report, ok, got bool) {
	l, p := sv.l, sv.p
	select {
	case s := <-sigs:
		sv.onSignal(s)
	case <-sv.termKill:
		sv.termKill = nil
		if sv.status < 0 {
			sv.send("kill still running %v after hold got SIGTERM", sv.grace)
		}
	case why := <-sv.gone:
		// Another instance may hold the lease already: no grace.
		sv.gone, sv.goneWhy, sv.ended = nil, why, true
		p.Note("lease-gone", why+": another instance may take the lease at once, so the command and everything it started are killed now (no grace)", func(r *report.Record) { r.Key = l.Key(); r.PID = sv.pid })
		sv.send("kill the lease object was deleted or replaced")
	case <-sv.leaseEnd:
		sv.onLeaseEnd()
	case <-sv.stopAfter:
		sv.stopAfter = nil
		if sv.status < 0 {
			p.Note("stopping", fmt.Sprintf("the lease ended (%s): sending SIGTERM to the command and everything it started, SIGKILL in %v or at the fence deadline", endReason(l, p), sv.grace),
				func(r *report.Record) { r.PID = sv.pid; r.Signal = "SIGTERM" })
		}
		sv.send("stop %d", int64(sv.grace)) // hurries what the command left behind, if it is gone
	case rep, ok = <-reports:
		return rep, ok, true
	}
	return supervise.Report{}, false, false
}

// onSignal passes a signal on unless the command ended or the terminal sent
// it too; a first SIGTERM starts the --grace.
func (sv *supervisor) onSignal(s os.Signal) {
	p, pid := sv.p, sv.pid
	ss, _ := s.(syscall.Signal)
	if sv.status >= 0 {
		p.Note("signal", fmt.Sprintf("received %s; the command has ended, waiting for what it left running", supervise.SignalName(s)), func(r *report.Record) { r.Signal = supervise.SignalName(s) })
		return
	}
	if supervise.TerminalDelivers(ss, sv.mode.SharesGroup) {
		p.Note("signal", fmt.Sprintf("received %s from the terminal, which sent it to pid %d too", supervise.SignalName(s), pid), func(r *report.Record) { r.Signal = supervise.SignalName(s); r.PID = pid })
		return
	}
	if ss == syscall.SIGTERM && sv.termKill == nil {
		sv.termKill = time.After(sv.grace)
		p.Note("signal", fmt.Sprintf("received %s; passing it on to pid %d; SIGKILL to it and everything it started in %v unless it has exited", supervise.SignalName(s), pid, sv.grace),
			func(r *report.Record) { r.Signal = supervise.SignalName(s); r.PID = pid })
	} else {
		if pid == 0 {
			// The watchdog has started the command (it reads
			// this only then) but its report is not read yet.
			p.Note("signal", fmt.Sprintf("received %s; passing it on to the command", supervise.SignalName(s)), func(r *report.Record) { r.Signal = supervise.SignalName(s) })
		} else {
			p.Note("signal", fmt.Sprintf("received %s; passing it on to pid %d", supervise.SignalName(s), pid), func(r *report.Record) { r.Signal = supervise.SignalName(s); r.PID = pid })
		}
	}
	sv.send("signal %d", int(ss))
}

// onLeaseEnd stops the command: SIGKILL at once if the lease was taken from
// this holder, else SIGTERM and the --grace.
func (sv *supervisor) onLeaseEnd() {
	l, p := sv.l, sv.p
	sv.leaseEnd, sv.ended = nil, true
	if errors.Is(l.Err(), lease.ErrLost) {
		// Another instance may hold the lease already: no grace.
		what := "the command and everything it started are"
		if sv.status >= 0 {
			what = "whatever the command left running is"
		}
		p.Note("stopping", "the lease was taken from this holder (broken, taken over or overwritten): another instance may hold it already, so "+what+" killed now (SIGKILL, no grace)",
			func(r *report.Record) { r.PID = sv.pid; r.Signal = "SIGKILL" })
		sv.send("kill the lease was lost")
		return
	}
	// What the watchdog already did (after hold was stopped,
	// say) is reported first: a moment for its reports.
	sv.stopAfter = time.After(100 * time.Millisecond)
}

// finish is hold's outcome once reports end: the command's if the watchdog
// saw everything gone, else the watchdog died and its tree is killed.
func (sv *supervisor) finish() error {
	<-sv.exited
	if sv.status >= 0 && sv.how == "clean" {
		if sv.goneWhy != "" {
			return exitcode.With(exitcode.LeaseEnded, fmt.Errorf("the lease %s ended while held: %s; the command was killed", sv.l.Key(), sv.goneWhy))
		}
		return commandResult(sv.l, sv.p, sv.status, sv.ended)
	}
	// The watchdog died: what it supervised is ours now.
	n := supervise.KillOrphans(sv.pid, sv.subreaper)
	err := fmt.Errorf("the watchdog (pid %d) died; killed %d processes it supervised", sv.proc.Pid, n)
	sv.p.Note("watchdog-died", err.Error(), func(r *report.Record) { r.PID = sv.proc.Pid })
	return err
}

// onReport acts on one of the watchdog's reports, and returns done, with
// hold's outcome, if the command could not be started.
func (sv *supervisor) onReport(rep supervise.Report) (done bool, err error) {
	l, argv, mode := sv.l, sv.argv, sv.mode
	f := rep.Fields
	note := func(event, msg string, fill func(*report.Record)) { sv.p.NoteAt(rep.At, event, msg, fill) }
	arg := func(i int) string {
		if i < len(f) {
			return f[i]
		}
		return ""
	}
	switch f[0] {
	case "started":
		sv.pid, _ = strconv.Atoi(arg(1))
		note("command-started", fmt.Sprintf("started %q (pid %d) under the lease, watched by pid %d %s", argv[0], sv.pid, sv.proc.Pid, mode.Words),
			func(r *report.Record) { r.PID = sv.pid; r.Detail = mode.Name })
	case "start-failed":
		code, _ := strconv.Atoi(arg(1))
		<-sv.exited
		return true, exitcode.With(code, fmt.Errorf("command %q could not be started: %s", argv[0], arg(2)))
	case "warning":
		note("warning", "watchdog: "+strings.Join(f[1:], " "), nil)
	case "stopped":
		n, _ := strconv.Atoi(arg(1))
		sv.c.Pause()
		note("command-stopped", fmt.Sprintf("pid %d was stopped (%s); the lease is not renewed while it is stopped: unless it continues, it is killed at the fence deadline, %s",
			sv.pid, supervise.SignalName(syscall.Signal(n)), report.UTC(l.Deadline())), func(r *report.Record) { r.PID = sv.pid; r.Signal = supervise.SignalName(syscall.Signal(n)) })
	case "continued":
		if l.MayWrite() {
			sv.c.Resume()
			note("command-continued", fmt.Sprintf("pid %d continued; renewing the lease again", sv.pid), func(r *report.Record) { r.PID = sv.pid })
		}
	case "exited":
		sv.status, _ = strconv.Atoi(arg(1))
		code := sv.status
		note("command-exited", fmt.Sprintf("%q (pid %d) %s", argv[0], sv.pid, arg(2)), func(r *report.Record) { r.PID = sv.pid; r.Status = &code })
	case "leftover":
		note("stopping", fmt.Sprintf("sent SIGTERM to %s processes pid %d left running; SIGKILL in %v", arg(1), sv.pid, sv.grace),
			func(r *report.Record) { r.PID = sv.pid; r.Signal = "SIGTERM" })
	case "killed":
		note("killed", fmt.Sprintf("the watchdog sent SIGKILL to %s processes: %s", arg(1), arg(2)), func(r *report.Record) { r.Signal = "SIGKILL"; r.Detail = arg(2) })
		if strings.Contains(arg(2), "fence deadline") {
			sv.ended = true
		}
	case "clean":
		sv.how = "clean"
	}
	return false, nil
}

// commandResult is hold's exit once the command's tree is gone.
func commandResult(l *lease.Lease, p *report.Printer, status int, ended bool) error {
	if l.Err() == nil && !l.MayWrite() {
		// Past the fence deadline: wait for the lease's due fence timer, so
		// the outcome does not depend on which came first.
		select {
		case <-l.Done():
		case <-time.After(time.Second):
		}
	}
	if ended || l.Err() != nil {
		if l.Err() == nil {
			return exitcode.With(exitcode.LeaseEnded, fmt.Errorf("the command was killed at the fence deadline of the lease %s: hold could not renew it in time", l.Key()))
		}
		return leaseEnded(l, p)
	}
	if status != 0 {
		return exitcode.With(status, nil)
	}
	return nil
}
