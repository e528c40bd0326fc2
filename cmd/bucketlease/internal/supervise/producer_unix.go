//go:build unix

package supervise

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// A Producer is put's COMMAND, run under the watchdog as hold runs its
// command (see watchdogModes). Its stdout is a pipe to put that the
// watchdog holds too, so the body ends only once the producer and all it
// left running are gone. There is no deadline: the lease fences the
// upload, not the producer.
type Producer struct {
	name      string
	out       io.ReadCloser // put's end of the producer's stdout
	proc      *os.Process   // the watchdog
	mode      Mode
	subreaper bool // the watchdog's orphans come to put
	ctl       *os.File

	ctlMu sync.Mutex // one message at a time on ctl

	mu       sync.Mutex
	pid      int    // the producer's pid, once started
	status   int    // its exit code, 128+N for signal N
	desc     string // how it ended ("exited with status 1"), once it has
	startErr error  // the watchdog could not start it
	clean    bool   // the watchdog saw nothing left running

	started, exited *latch // reported, or the reports ended
	gone            chan struct{}
	stopOnce        sync.Once
}

// latch is a channel closed at most once.
type latch struct {
	c chan struct{}
	o sync.Once
}

func newLatch() *latch  { return &latch{c: make(chan struct{})} }
func (o *latch) close() { o.o.Do(func() { close(o.c) }) }

// StartProducer starts argv (found at path) under the watchdog (self; "" for
// os.Executable) with put's stdin and stderr and its stdout a pipe to put,
// and returns once it started. pidNS false avoids a PID namespace.
func StartProducer(self, path string, argv []string, stderr io.Writer, pidNS bool) (*Producer, error) {
	if self == "" {
		var err error
		if self, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("put: cannot find this program to run the producer's watchdog: %w; nothing was written", err)
		}
	}
	// ends are out, control and report: put keeps the read end of out and
	// report, the write end of control.
	ends, err := pipes(3)
	if err != nil {
		return nil, err
	}
	errFile, errDone, err := fileFor(stderr)
	if err != nil {
		closeAll(ends)
		return nil, err
	}
	subreaper := BecomeSubreaper() == nil
	args := WatchdogArgs(3, 4, ProducerGrace, math.MaxInt64, math.MaxInt64, path, argv)
	proc, mode, reaped, err := StartWatchdog(pidNS, self, args, &os.ProcAttr{
		Files: []*os.File{os.Stdin, ends[0][1], errFile, ends[1][0], ends[2][1]},
		Env:   os.Environ(),
	})
	ends[0][1].Close()
	ends[1][0].Close()
	ends[2][1].Close()
	errDone()
	if err != nil {
		ends[0][0].Close()
		ends[1][1].Close()
		ends[2][0].Close()
		return nil, fmt.Errorf("put: starting the producer's watchdog (%s): %w; nothing was written", self, err)
	}
	p := &Producer{name: argv[0], out: ends[0][0], proc: proc, mode: mode, subreaper: subreaper, ctl: ends[1][1],
		started: newLatch(), exited: newLatch(), gone: make(chan struct{})}
	go p.readReports(ends[2][0], reaped)
	<-p.started.c
	p.mu.Lock()
	serr := p.startErr
	p.mu.Unlock()
	if serr != nil {
		p.Stop(0)
		return nil, serr
	}
	return p, nil
}

// pipes opens n pipes, or none.
func pipes(n int) ([][2]*os.File, error) {
	var ends [][2]*os.File
	for range n {
		r, w, err := os.Pipe()
		if err != nil {
			closeAll(ends)
			return nil, err
		}
		ends = append(ends, [2]*os.File{r, w})
	}
	return ends, nil
}

func closeAll(ends [][2]*os.File) {
	for _, e := range ends {
		e[0].Close()
		e[1].Close()
	}
}

// fileFor returns w as a file for a child process: w itself if it is one,
// else a pipe copied to w. done closes put's end, once the child has it.
func fileFor(w io.Writer) (f *os.File, done func(), err error) {
	if f, ok := w.(*os.File); ok {
		return f, func() {}, nil
	}
	r, pw, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	go func() {
		defer r.Close()
		_, _ = io.Copy(w, r)
	}()
	return pw, func() { pw.Close() }, nil
}

// readReports reads the watchdog's reports until it has exited (reaped
// closes once it is waited for), then closes gone.
func (p *Producer) readReports(r *os.File, reaped <-chan struct{}) {
	defer func() {
		r.Close()
		<-reaped
		p.started.close()
		p.exited.close()
		close(p.gone)
	}()
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		rep, ok := parseReport(sc.Text())
		if !ok {
			continue
		}
		f := rep.Fields
		arg := func(i int) string {
			if i < len(f) {
				return f[i]
			}
			return ""
		}
		p.mu.Lock()
		switch f[0] {
		case "started":
			p.pid, _ = strconv.Atoi(arg(1))
			p.started.close()
		case "start-failed":
			code, _ := strconv.Atoi(arg(1))
			p.startErr = &StartError{Code: code, Err: fmt.Errorf("put: the producer %q could not be started: %s; nothing was written", p.name, arg(2))}
			p.started.close()
		case "exited":
			p.status, _ = strconv.Atoi(arg(1))
			p.desc = arg(2)
			p.exited.close()
		case "clean":
			p.clean = true
		}
		p.mu.Unlock()
	}
}

// send writes one message to the watchdog; one that fails finds it gone.
func (p *Producer) send(format string, args ...any) {
	p.ctlMu.Lock()
	defer p.ctlMu.Unlock()
	_, _ = fmt.Fprintf(p.ctl, format+"\n", args...)
}

// Wait waits for the producer to exit, and says how it ended: nil for exit
// status 0, else an error wrapping ErrProducerFailed.
func (p *Producer) Wait() error {
	<-p.exited.c
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.desc == "":
		return fmt.Errorf("%w: the watchdog (pid %d) of %q died before it reported how %q ended", ErrProducerFailed, p.proc.Pid, p.name, p.name)
	case p.status != 0:
		return fmt.Errorf("%w: %q %s", ErrProducerFailed, p.name, p.desc)
	}
	return nil
}

// Signal passes a signal on to the producer unless the terminal sent it too.
func (p *Producer) Signal(s os.Signal) {
	ss, ok := s.(syscall.Signal)
	if p == nil || !ok || TerminalDelivers(ss, p.mode.SharesGroup) {
		return
	}
	p.send("signal %d", int(ss))
}

// Stop ends the producer and all it started: it closes put's end of its
// stdout, has the watchdog send SIGTERM, then SIGKILL after grace, and
// returns once the watchdog has exited.
func (p *Producer) Stop(grace time.Duration) {
	if p == nil {
		return
	}
	p.stopOnce.Do(func() {
		p.out.Close()
		select {
		case <-p.gone:
		default:
			p.send("stop %d", int64(grace))
		}
		p.awaitGone(grace)
	})
}

// awaitGone waits for the watchdog to exit (at most grace plus 5 s of
// reaping), else kills it and what it supervised.
func (p *Producer) awaitGone(grace time.Duration) {
	t := time.NewTimer(grace + 10*time.Second)
	defer t.Stop()
	select {
	case <-p.gone:
	case <-t.C:
		p.ctl.Close() // the watchdog kills everything when its control pipe closes
		_ = p.proc.Kill()
		<-p.gone
	}
	p.ctl.Close()
	p.mu.Lock()
	clean, pid := p.clean, p.pid
	p.mu.Unlock()
	if !clean {
		// The watchdog died: what it supervised is put's now.
		KillOrphans(pid, p.subreaper)
	}
}
