package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/bounded"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/exitcode"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/holding"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/put"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/report"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/statedir"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/internal/leaseseam"
	"github.com/mushroomdb/bucketlease/internal/location"
	"github.com/mushroomdb/bucketlease/lease"
)

// holdSignals are the signals that release the lease, or that hold passes
// on to the command; one ignored when hold started stays ignored.
func holdSignals() []os.Signal {
	var out []os.Signal
	for _, s := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, holding.SigQuit} {
		if !signal.Ignored(s) {
			out = append(out, s)
		}
	}
	return out
}

// openEvents returns where events go, and how to close it.
func openEvents(e *env, dest string) (io.Writer, func(), error) {
	switch {
	case dest == "" || dest == "stderr" || dest == "-":
		return e.stderr, func() {}, nil
	case strings.HasPrefix(dest, "fd:"):
		n, err := strconv.Atoi(strings.TrimPrefix(dest, "fd:"))
		if err != nil || n < 1 {
			return nil, nil, exitcode.Usagef("--events %q: fd:N takes a file descriptor number, such as fd:3", dest)
		}
		f := os.NewFile(uintptr(n), "events")
		if _, err := f.Stat(); err != nil {
			return nil, nil, exitcode.Usagef("--events %q: file descriptor %d is not open: %v", dest, n, err)
		}
		return f, func() {}, nil
	default:
		f, err := os.OpenFile(dest, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return nil, nil, fmt.Errorf("--events %q: %w", dest, err)
		}
		return f, func() { f.Close() }, nil
	}
}

// resolveCommand finds the command before the lease is taken, and maps a
// command that cannot run to the shell's codes.
func resolveCommand(name string) (string, error) {
	path, err := exec.LookPath(name)
	if err == nil {
		return path, nil
	}
	switch {
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		return "", exitcode.With(127, fmt.Errorf("command %q not found: %w; the lease was not taken", name, err))
	default:
		return "", exitcode.With(126, fmt.Errorf("command %q cannot be run: %w; the lease was not taken", name, err))
	}
}

func hold(ctx context.Context, e *env, f *holdFlags, loc *location.Location, command []string) (holdErr error) {
	logger, err := newLogger(e.stderr, f.logLevel, f.json)
	if err != nil {
		return err
	}
	w, closeEvents, err := openEvents(e, f.events)
	if err != nil {
		return err
	}
	defer closeEvents()
	// A closed pipe on our own output must not kill the supervision.
	put.IgnorePipeSignal()
	p := report.NewPrinter(w, f.json, f.verbose)
	p.Start()
	defer p.Close(2 * time.Second)
	if f.json { // every outcome, refusals included, ends with one event
		f.reported = true
		defer func() { p.Exit(f.remap(holdErr)) }()
	}
	var path string
	if len(command) > 0 {
		if path, err = resolveCommand(command[0]); err != nil {
			return err
		}
	}
	b, err := openUnder(ctx, loc)
	if err != nil {
		return err
	}
	prefix := loc.Prefix
	b = bounded.New(b, requestTimeout(f.ttl), loc, "a third of the TTL")
	c, err := holdContender(e, f, loc, b, command, logger, p)
	if err != nil {
		return err
	}
	defer c.Close()
	// Until the lease is held, a signal stops the attempt.
	waitCtx, stopWaiting := signalContext(ctx, holdSignals()...)
	l, err := acquire(waitCtx, c, b, prefix, f, p)
	if err != nil {
		stopWaiting()
		return explain(loc, err)
	}
	// A signal came as the lease was taken: release it and exit 128+N.
	interruptedAsTaken := func() error {
		code, why := interruptCode(waitCtx)
		return releaseAfter(l, loc, b, prefix, p, exitcode.With(code, interrupted{fmt.Errorf("%s as the lease was taken", why)}))
	}
	// From here on, signals are ours to handle: registered before
	// signalContext lets go of them, so none is missed, and only then is
	// signalContext asked whether one came meanwhile.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, holdSignals()...)
	defer signal.Stop(sigs)
	stopWaiting()
	if signalled(waitCtx) && ctx.Err() == nil {
		return interruptedAsTaken()
	}
	noteHolding(l, loc, p)
	if len(command) > 0 { // "bucketlease put KEY" in the command streams under this lease
		stopPut, err := put.Serve(l)
		if err != nil {
			return releaseAfter(l, loc, b, prefix, p, err)
		}
		defer stopPut()
	}
	k := &keeper{l: l, parent: ctx}
	k.start()
	watchCtx, stopWatch := context.WithCancel(ctx)
	gone := holding.Watch(watchCtx, l, b, prefix, f.watchEvery)
	result := holding.HoldUntilSignal
	if len(command) > 0 {
		cmd := &holding.Command{Self: e.self, Path: path, Argv: command, Grace: f.grace, PIDNamespace: f.pidNS, Pause: k.stop, Resume: k.start}
		result = cmd.Run
	}
	err = result(l, sigs, gone, p)
	stopWatch()
	k.stop()
	return releaseAfter(l, loc, b, prefix, p, err)
}

// holdContender makes hold's contender for the lease at loc, through b,
// named in the LEASE object after the command (or bucketlease hold). If
// the default state directory cannot be made (a read-only home, say), it
// runs without one, as before state directories existed.
func holdContender(e *env, f *holdFlags, loc *location.Location, b driver.Bucket, command []string, logger *slog.Logger, p *report.Printer) (*lease.Contender, error) {
	tool := "bucketlease hold"
	if len(command) > 0 {
		tool = filepath.Base(command[0]) // the name alone: arguments may carry secrets
	}
	opts := leaseseam.With(&lease.Options{TTL: f.ttl, InstanceID: f.instanceID, Logger: logger, OnEvent: p.Event, Holder: lease.ThisProcess(tool)}, leaseseam.Seams{Getenv: e.getenv})
	var err error
	opts.StateDir, err = statedir.For(e.getenv, f.stateDir, loc)
	if err != nil {
		return nil, exitcode.Usagef("--state-dir: %v", err)
	}
	c, err := lease.NewContender(bucket.New(b, loc.Prefix), opts)
	if err != nil && f.stateDir == "" && opts.StateDir != "" {
		p.Note("no-state", fmt.Sprintf("running without a state directory (%v); a restart waits for its own lease to go stale", err), nil)
		opts.StateDir = ""
		c, err = lease.NewContender(bucket.New(b, loc.Prefix), opts)
	}
	if err != nil {
		return nil, exitcode.Usagef("%v", err)
	}
	return c, nil
}

// noteHolding says that l is held: its key, instance, epoch, TTL,
// exclusion and clocks, and warns when the exclusion is not conditional.
func noteHolding(l *lease.Lease, loc *location.Location, p *report.Printer) {
	clocks, clocksSaid := "assumed synchronised", "clocks assumed synchronised (the driver reports no service time)"
	if leaseseam.Inside(l).ServiceClock {
		clocks, clocksSaid = "service", "clocks checked against the service's"
	}
	p.Note("holding", fmt.Sprintf("holding lease %s on %s as instance %s, epoch %d: ttl %v, renewing every %v, exclusion %s, %s",
		l.Key(), loc, l.InstanceID(), l.Epoch(), leaseseam.Inside(l).TTL, (leaseseam.Inside(l).TTL/3).Round(time.Millisecond), l.Exclusion(), clocksSaid),
		func(r *report.Record) {
			r.Key, r.Instance, r.TTLSeconds, r.Exclusion = l.Key(), l.InstanceID(), int64(leaseseam.Inside(l).TTL/time.Second), l.Exclusion().String()
			r.Epoch = l.Epoch()
			r.Clocks = clocks
		})
	if l.Exclusion() != driver.Conditional {
		// Said whatever --log-level is: the lease's own WARN goes to a log
		// that is off by default.
		p.Note("warning", fmt.Sprintf("exclusion is %s (%s=off): each step is a read then an unconditional write, so two instances that start together may both proceed",
			l.Exclusion(), lease.EnvConditional), func(r *report.Record) { r.Exclusion = l.Exclusion().String() })
	}
}

// keeper runs Lease.Keep in the background, and can pause it: hold does
// not renew the lease while its command is stopped.
type keeper struct {
	l      *lease.Lease
	parent context.Context
	cancel context.CancelFunc
	done   chan struct{}
}

func (k *keeper) start() {
	if k.cancel != nil || k.l.Err() != nil {
		return
	}
	ctx, cancel := context.WithCancel(k.parent)
	done := make(chan struct{})
	k.cancel, k.done = cancel, done
	go func() {
		defer close(done)
		_ = k.l.Keep(ctx)
	}()
}

func (k *keeper) stop() {
	if k.cancel == nil {
		return
	}
	k.cancel()
	<-k.done
	k.cancel, k.done = nil, nil
}

// newLogger returns the logger for --log-level, on stderr, as JSON with
// --json; "off" (the default) discards it. Hold's events come from
// lease.Options.OnEvent, never from the log: the log is for debugging.
func newLogger(w io.Writer, level string, asJSON bool) (*slog.Logger, error) {
	if level == "off" {
		return slog.New(slog.DiscardHandler), nil
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, exitcode.Usagef("--log-level %q: use off, debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	if asJSON {
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return slog.New(slog.NewTextHandler(w, opts)), nil
}
