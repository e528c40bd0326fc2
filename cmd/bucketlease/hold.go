package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/lease"
)

var holdCommand = &command{
	name:    "hold",
	args:    "URL [FLAGS] [-- COMMAND [ARGS...]]",
	summary: "take the lease and keep renewing it, until interrupted or while COMMAND runs",
	help: `Takes the lease on the URL's prefix ({prefix}/LEASE), keeps renewing it every
TTL/3 and reports each change on one line on stderr (or where --events says):
acquired, took-over, renewal-failed, fenced, lost, released (renewed too with
-v). Ctrl-C (SIGINT), SIGTERM, SIGHUP or SIGQUIT releases the lease and exits
0; a signal that was ignored when hold started (nohup) stays ignored.

If another instance holds the lease, hold names it, says when the lease could
be taken over, and exits 3; with --wait it keeps trying (as one instance, with
one id), looks again every few seconds and takes the lease as soon as it is
released or stale. A lease that names this --instance-id but that this
process did not write is held too (another process with the same id, or a
restart of this one); with --wait, hold exits 6 as soon as it sees that
other process renew it: give each process its own id.

With a COMMAND after "--", hold looks the command up first (exit 127 or 126
without touching the lease), then runs it only while the lease is held. The
command's stdin, stdout and stderr are hold's own, passed through untouched.
A watchdog process (part of this binary) sits between hold and the command
and kills the command and everything it started (SIGKILL) the moment the
fence deadline passes, a little before anyone else may take the lease over,
unless hold has extended it by renewing; and at once if hold dies. So the
command stops writing in time even if hold is stopped (Ctrl-Z), starved or
killed. On Linux the watchdog is the init of a new PID namespace (inside a
new user namespace for an unprivileged user), so the kernel kills every
process the command started when the watchdog dies, even one that called
setsid, and a kill of hold's whole process group leaves nothing running;
where no namespace is allowed, it runs in a session of its own as a child
subreaper. Elsewhere it runs in a session of its own and kills the
command's process group. hold also reads the lease object back every
--watch (TTL/30, 100ms to 1s) and kills the command at once if something
else deleted or replaced it (a sync tool with --delete): keep the lease's
prefix out of the tree such a tool mirrors.

hold passes SIGINT, SIGTERM, SIGHUP and SIGQUIT on to the command (followed
by SIGCONT if it is stopped; not SIGINT and SIGQUIT from the terminal, which
the command gets itself); after SIGTERM, everything still running is killed
once --grace has passed, the lease released and hold exits. An empty
command after -- is refused (exit 2). When the lease is taken from under the
command (broken by an operator, taken over or overwritten by another
instance, deleted) hold kills it and everything it started at once with
SIGKILL, without --grace: another instance may hold the lease already, and
reports no release (nothing of its own is left to release). While the command is
stopped (Ctrl-Z, SIGSTOP, or reading the terminal in the background), hold
does not renew the lease: unless it continues, it is killed at the fence
deadline. When the command has exited, hold sends SIGTERM to whatever it left
running, SIGKILL after --grace, and only then releases the lease. It exits
with the command's status, 124 if the lease ended under it, or 125 if the
lease could not be released.

Examples:
  bucketlease hold file:///var/backups/db1
  bucketlease hold 's3://my-bucket/backups/db1?region=eu-west-1' --ttl 30s --wait
  bucketlease hold file:///var/backups/db1 --wait -- ./backup.sh --full
  bucketlease hold file:///var/backups/db1 --json --events /var/log/db1-lease.log --instance-id "$(hostname)" -- pg_dump db1 > db1.sql`,
	setup: setupHold,
}

type holdFlags struct {
	ttl         time.Duration
	instanceID  string
	wait        bool
	waitTimeout time.Duration
	grace       time.Duration
	verbose     bool
	json        bool
	events      string
	logLevel    string
	watchEvery  time.Duration
	conflict    int  // exit code for a held lease (-E, like flock's)
	pidNS       bool // run the watchdog in a PID namespace where allowed
	lost        int  // exit code for a lease that ended while held
	stateDir    string
	// reported is set once hold has arranged to write the exit event.
	reported bool
}

func setupHold(fs *flag.FlagSet) runFunc {
	f := &holdFlags{}
	durationVar(fs, &f.ttl, "ttl", lease.DefaultTTL, "how long the lease stays fresh after each renewal; a whole number of seconds, 1s to 1h")
	fs.StringVar(&f.instanceID, "instance-id", "", "this instance's id in the LEASE object, such as the host name (default: random); one per process: a second live process with the same id is refused")
	fs.BoolVar(&f.wait, "wait", false, "if the lease is held, keep trying until it can be taken")
	durationVar(fs, &f.waitTimeout, "wait-timeout", 0, "with --wait, give up (exit 3) after this long; 0 waits until interrupted")
	fs.Var(waitSeconds{&f.wait, &f.waitTimeout}, "w", "as flock -w: wait at most `SECS` seconds (a number, no unit) for the lease, then exit 3 (or -E's code); the same as --wait --wait-timeout SECSs")
	durationVar(fs, &f.grace, "grace", 10*time.Second, "how long after SIGTERM to send SIGKILL to the command and what it left running (never past the fence deadline)")
	fs.BoolVar(&f.verbose, "v", false, "also report every renewal")
	fs.BoolVar(&f.verbose, "verbose", false, "also report every renewal")
	fs.BoolVar(&f.json, "json", false, "report events as JSON lines")
	fs.StringVar(&f.events, "events", "stderr", "where events go: stderr, fd:N (an open file descriptor), or a file path (appended to)")
	fs.StringVar(&f.logLevel, "log-level", "off", "the lease's own log on stderr: off, debug, info, warn or error")
	fs.BoolVar(&f.pidNS, "pid-namespace", true, "on Linux, run the command in a new PID namespace where allowed, which the kernel kills as a whole; false runs it without one (so that it can signal processes outside), as where none is allowed")
	fs.IntVar(&f.conflict, "E", exitHeld, "the exit code when another instance holds the lease (as flock -E); 1 to 255")
	fs.IntVar(&f.conflict, "conflict-exit", exitHeld, "the exit code when another instance holds the lease (same as -E); 1 to 255")
	fs.IntVar(&f.lost, "lost-exit", exitLeaseEnded, "the exit code when the lease was lost, fenced or broken while held; 1 to 255")
	fs.StringVar(&f.stateDir, "state-dir", "", "where this instance keeps its lock and notes between runs, so that a restart with the same --instance-id takes back the lease it left at once and a suspect LEASE is watched across runs (default: $XDG_STATE_HOME/bucketlease, else ~/.local/state/bucketlease; none turns it off); on a local file system")
	durationVar(fs, &f.watchEvery, "watch", 0, "how often to read the lease object back between renewals, to stop the command at once if something else deleted or replaced it (default: TTL/30, 100ms to 1s; 0 turns it off)")
	run := func(ctx context.Context, e *env, args []string) error {
		pos, command, err := parseArgs(fs, args)
		if err != nil {
			return err
		}
		if len(pos) != 1 {
			return usageErrorf("hold needs one URL, then the command after --, such as: bucketlease hold file:///var/backups/db1 -- ./backup.sh")
		}
		if err := f.check(fs); err != nil {
			return err
		}
		if (len(command) == 0 && slices.Contains(args, "--")) || (len(command) > 0 && command[0] == "") {
			return usageErrorf("hold: the command after -- is empty (an unset variable, such as -- $CMD?); name a command, or leave out the -- to hold the lease until interrupted")
		}
		if err := refuseInProcess("hold", pos[0]); err != nil {
			return err
		}
		if f.instanceID == lease.BreakerID {
			return usageErrorf("--instance-id %s is the id bucketlease break writes into the records it leaves; show would call this holder \"broken by an operator\". Choose another, such as the host name", lease.BreakerID)
		}
		if len(command) > 0 && !commandSupported {
			return usageErrorf("hold -- COMMAND needs a Unix system: there is no watchdog for this one yet; run hold without a command")
		}
		return f.remap(hold(ctx, e, f, pos[0], command))
	}
	return func(ctx context.Context, e *env, args []string) error {
		err := run(ctx, e, args)
		// With --json, every outcome ends with an exit event; hold writes
		// its own once its events are open. One that stopped before (a
		// usage error, the flag package's among them, which may have come
		// before --json on the command line) is reported here, on stderr.
		if !f.reported && (f.json || wantsJSON(args)) && !errors.Is(err, flag.ErrHelp) {
			p := &printer{w: e.stderr, json: true}
			p.exit(err)
		}
		return err
	}
}

// remap gives hold's own "held" and "lease ended" outcomes the codes
// chosen with -E and --lost-exit. A command's own exit status (an exitErr
// without an error) is never changed.
func (f *holdFlags) remap(err error) error {
	var ee *exitErr
	if errors.As(err, &ee) && ee.err != nil {
		switch ee.code {
		case exitHeld:
			ee.code = f.conflict
		case exitLeaseEnded:
			ee.code = f.lost
		}
	}
	return err
}

// check refuses flag values outside their documented range.
func (f *holdFlags) check(fs *flag.FlagSet) error {
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	switch {
	case f.ttl < time.Second || f.ttl > lease.MaxSaneTTL:
		return usageErrorf("--ttl %v: the TTL is a whole number of seconds from 1s to %v", f.ttl, lease.MaxSaneTTL)
	case f.ttl%time.Second != 0:
		return usageErrorf("--ttl %v: the TTL is a whole number of seconds from 1s to %v", f.ttl, lease.MaxSaneTTL)
	case f.grace < 0:
		return usageErrorf("--grace %v: it cannot be negative", f.grace)
	case f.waitTimeout < 0:
		return usageErrorf("--wait-timeout %v: it cannot be negative", f.waitTimeout)
	case set["wait-timeout"] && !f.wait:
		return usageErrorf("--wait-timeout works only with --wait")
	case f.conflict < 1 || f.conflict > 255:
		return usageErrorf("-E %d: an exit code is 1 to 255", f.conflict)
	case f.lost < 1 || f.lost > 255:
		return usageErrorf("--lost-exit %d: an exit code is 1 to 255", f.lost)
	case f.watchEvery < 0:
		return usageErrorf("--watch %v: it cannot be negative (0 turns the watch off)", f.watchEvery)
	}
	if !set["watch"] {
		f.watchEvery = leaseWatchInterval(f.ttl)
	}
	return nil
}

// holdSignals are the signals that release the lease, or that hold passes
// on to the command; one ignored when hold started stays ignored.
func holdSignals() []os.Signal {
	var out []os.Signal
	for _, s := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, sigQuit} {
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
			return nil, nil, usageErrorf("--events %q: fd:N takes a file descriptor number, such as fd:3", dest)
		}
		f := os.NewFile(uintptr(n), "events")
		if _, err := f.Stat(); err != nil {
			return nil, nil, usageErrorf("--events %q: file descriptor %d is not open: %v", dest, n, err)
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
		return "", withCode(127, fmt.Errorf("command %q not found: %w; the lease was not taken", name, err))
	default:
		return "", withCode(126, fmt.Errorf("command %q cannot be run: %w; the lease was not taken", name, err))
	}
}

func hold(ctx context.Context, e *env, f *holdFlags, rawURL string, command []string) (holdErr error) {
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
	if !signal.Ignored(syscall.SIGPIPE) {
		signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	}
	p := &printer{w: w, json: f.json, verbose: f.verbose}
	p.start()
	defer p.close(2 * time.Second)
	if f.json { // every outcome, refusals included, ends with one event
		f.reported = true
		defer func() { p.exit(f.remap(holdErr)) }()
	}
	var path string
	if len(command) > 0 {
		if path, err = resolveCommand(command[0]); err != nil {
			return err
		}
	}
	// The URL is parsed once: the driver, the messages and the state
	// directory read loc.
	loc, err := parseURL(rawURL)
	if err != nil {
		return err
	}
	if err := fileLeaseNotObjectAt(loc); err != nil {
		return err
	}
	b, err := openLocation(ctx, loc)
	if err != nil {
		return err
	}
	prefix := loc.Prefix
	b = withDeadlines(b, requestTimeout(f.ttl), loc.String(), "a third of the TTL")
	tool := "bucketlease hold"
	if len(command) > 0 {
		tool = filepath.Base(command[0]) // the name alone: arguments may carry secrets
	}
	opts := &lease.Options{TTL: f.ttl, InstanceID: f.instanceID,
		Logger: logger, OnEvent: p.event, Getenv: e.getenv, Holder: lease.ThisProcess(tool)}
	opts.StateDir, err = stateDirFor(e, f.stateDir, loc)
	if err != nil {
		return usageErrorf("--state-dir: %v", err)
	}
	c, err := lease.NewContender(b, prefix, opts)
	if err != nil && f.stateDir == "" && opts.StateDir != "" {
		// The default state directory could not be made (a read-only
		// home, say): run without it, as before it existed.
		p.note("no-state", fmt.Sprintf("running without a state directory (%v); a restart waits for its own lease to go stale", err), nil)
		opts.StateDir = ""
		c, err = lease.NewContender(b, prefix, opts)
	}
	if err != nil {
		return usageErrorf("%v", err)
	}
	defer c.Close()
	// Until the lease is held, a signal stops the attempt.
	waitCtx, stopWaiting := signalContext(ctx, holdSignals()...)
	l, err := acquire(waitCtx, c, b, prefix, f, p)
	if err != nil {
		stopWaiting()
		return explainScheme(loc.Scheme, err)
	}
	// A signal came as the lease was taken: release it and exit 128+N.
	interruptedAsTaken := func() error {
		code, why := interruptCode(waitCtx)
		return releaseAfter(l, loc, b, prefix, p, withCode(code, interrupted{fmt.Errorf("%s as the lease was taken", why)}))
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
	p.note("holding", fmt.Sprintf("holding lease %s on %s as instance %s: ttl %v, renewing every %v, exclusion %s",
		l.Key(), loc, l.InstanceID(), l.TTL(), (l.TTL()/3).Round(time.Millisecond), l.Exclusion()),
		func(r *record) {
			r.Key, r.Instance, r.TTLSeconds, r.Exclusion = l.Key(), l.InstanceID(), int64(l.TTL()/time.Second), l.Exclusion().String()
		})
	if l.Exclusion() != driver.Conditional {
		// Said whatever --log-level is: the lease's own WARN goes to a log
		// that is off by default.
		p.note("warning", fmt.Sprintf("exclusion is %s (%s=off): each step is a read then an unconditional write, so two instances that start together may both proceed",
			l.Exclusion(), lease.EnvConditional), func(r *record) { r.Exclusion = l.Exclusion().String() })
	}

	if len(command) > 0 { // "bucketlease put KEY" in the command streams under this lease
		stopPut, err := servePut(l)
		if err != nil {
			return releaseAfter(l, loc, b, prefix, p, err)
		}
		defer stopPut()
	}
	k := &keeper{l: l, parent: ctx}
	k.start()
	watchCtx, stopWatch := context.WithCancel(ctx)
	gone := watchLease(watchCtx, l, b, prefix, f.watchEvery)
	var result error
	if len(command) == 0 {
		result = holdUntilSignal(l, sigs, gone, p)
	} else {
		result = superviseCommand(e, l, k, path, command, sigs, gone, f.grace, f.pidNS, p)
	}
	stopWatch()
	k.stop()
	return releaseAfter(l, loc, b, prefix, p, result)
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

// acquire takes the lease, or with --wait keeps trying until it can.
func acquire(ctx context.Context, c *lease.Contender, b driver.Bucket, prefix string, f *holdFlags, p *printer) (*lease.Lease, error) {
	if f.wait && f.waitTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.waitTimeout)
		defer cancel()
	}
	var last *lease.HeldError
	var lastSeen time.Time // when last was read, by our clock
	failures := 0
	vanished := false
	for {
		// A lease seen fresh, now gone without a release: something other
		// than bucketlease deleted it, and its holder may still be
		// writing. Take it only once its holder's fence has passed.
		if gate := vanishedGate(last, lastSeen); !gate.IsZero() && time.Now().Before(gate) {
			if st, err := lease.Inspect(ctx, b, prefix, time.Now()); err == nil && st.State == lease.Free {
				if !vanished {
					vanished = true
					p.note("lease-vanished", fmt.Sprintf("lease %s vanished while %s held it, without a release (something other than bucketlease deleted it); its holder may still be writing, so waiting until %s, a TTL after its last renewal, before taking it",
						st.Key, holderText(last.Holder()), utc(gate)), func(r *record) { r.Key, r.Holder, r.TakeoverAt = st.Key, last.Holder(), utc(gate) })
				}
				if err := sleep(ctx, min(time.Until(gate)+10*time.Millisecond, waitPoll(f.ttl))); err != nil {
					return nil, stoppedWaiting(ctx, last)
				}
				continue
			}
		}
		l, err := c.Acquire(ctx)
		var held *lease.HeldError
		switch {
		case err == nil:
			return l, nil
		case ctx.Err() != nil:
			return nil, stoppedWaiting(ctx, last)
		case errors.Is(err, lease.ErrInstanceInUse):
			//lint:ignore ST1005 the line after the error is a sentence for people, as printed
			return nil, withCode(exitInstanceInUse, fmt.Errorf("%w\nAnother live process holds this lease under the same instance id (%s). Give each process its own --instance-id; waiting would not help.",
				err, c.InstanceID()))
		case errors.Is(err, lease.ErrPreconditionsIgnored):
			return nil, withCode(exitProbeFailed, err)
		case errors.As(err, &held):
			failures = 0
			if !f.wait {
				//lint:ignore ST1005 the line after the error is a sentence for people, as printed
				return nil, withCode(exitHeld, fmt.Errorf("%w\nRun with --wait to take it over when it is free.", err))
			}
			if f.verbose || last == nil || last.Holder() != held.Holder() || last.State != held.State {
				p.held(held, true)
			}
			last, lastSeen, vanished = held, time.Now(), false
		case f.wait && retriable(err) && failures < maxWaitFailures:
			failures++
			p.note("retrying", fmt.Sprintf("acquire failed (%d of %d in a row): %v", failures, maxWaitFailures, err), nil)
		default:
			return nil, err
		}
		if err := sleep(ctx, retryDelay(held, failures, f.ttl)); err != nil {
			return nil, stoppedWaiting(ctx, last)
		}
	}
}

// vanishedGate is when a waiter that last saw the fresh lease last (at
// seen) may take the lease if it finds the object gone: the takeover time
// it was told, on its own monotonic clock. Zero when there is no such
// lease (none seen, or a suspect one).
func vanishedGate(last *lease.HeldError, seen time.Time) time.Time {
	if last == nil || last.State != lease.Fresh {
		return time.Time{}
	}
	return seen.Add(last.TakeoverAt.Sub(last.Now))
}

// maxWaitFailures bounds how many acquire errors in a row (other than a
// held lease) --wait rides out.
const maxWaitFailures = 5

// retriable reports whether an acquire error may pass: not a service that
// ignores preconditions, not an instance id in use, not a key the driver
// can never store (a LEASE that is a directory, say), and not a wrong
// setting.
func retriable(err error) bool {
	return !errors.Is(err, lease.ErrPreconditionsIgnored) && !errors.Is(err, lease.ErrInstanceInUse) &&
		!errors.Is(err, driver.ErrInvalidKey) && !errors.Is(err, context.Canceled)
}

// waitPoll is how often --wait looks at a held lease again, so that it
// sees a release at once: a sixth of the TTL, from 250 ms to 2 s.
func waitPoll(ttl time.Duration) time.Duration {
	return min(max(ttl/6, 250*time.Millisecond), 2*time.Second)
}

// retryDelay is how long --wait sleeps before the next attempt: until the
// lease could be taken over (a little after) or the next look, whichever
// is sooner; or a backoff after an error.
func retryDelay(held *lease.HeldError, failures int, ttl time.Duration) time.Duration {
	if held == nil {
		return time.Duration(1<<min(failures, 5)) * time.Second
	}
	return min(max(held.TakeoverAt.Sub(held.Now)+100*time.Millisecond, 100*time.Millisecond), waitPoll(ttl))
}

// stoppedWaiting is the error for a wait that a signal or --wait-timeout
// ended.
func stoppedWaiting(ctx context.Context, last *lease.HeldError) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) && !errors.As(context.Cause(ctx), new(signalCause)) {
		if last != nil {
			return withCode(exitHeld, fmt.Errorf("--wait-timeout passed before the lease could be taken: %w", last))
		}
		return withCode(exitHeld, errors.New("--wait-timeout passed before the lease could be taken"))
	}
	code, why := interruptCode(ctx)
	if last != nil {
		return withCode(code, interrupted{fmt.Errorf("%s before the lease could be taken: %w", why, last)})
	}
	return withCode(code, interrupted{fmt.Errorf("%s before the lease could be taken", why)})
}

// errInterrupted matches hold's errors for a signal that came before the
// lease was held (errors.Is).
var errInterrupted = errors.New("interrupted")

// interrupted is such an error.
type interrupted struct{ err error }

func (e interrupted) Error() string        { return e.err.Error() }
func (e interrupted) Unwrap() error        { return e.err }
func (e interrupted) Is(target error) bool { return target == errInterrupted }

// signalCause is the cause of a context that a signal ended.
type signalCause struct{ sig os.Signal }

func (c signalCause) Error() string { return "received " + sigName(c.sig) }

// signalContext is signal.NotifyContext whose cause (context.Cause) names
// the signal, so that hold can exit 128+N for it as a shell would. Its
// stop function lets go of the signals and returns only once every signal
// that reached it is recorded as the cause, so that signalled, asked after
// stop, misses none.
func signalContext(parent context.Context, sigs ...os.Signal) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sigs...)
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		select {
		case s := <-ch:
			cancel(signalCause{s})
		case <-done:
		}
	}()
	var once bool
	return ctx, func() {
		if once {
			return
		}
		once = true
		signal.Stop(ch)
		close(done)
		<-exited
		select {
		case s := <-ch: // delivered as done closed; the goroutine chose done
			cancel(signalCause{s})
		default:
		}
		cancel(context.Canceled)
	}
}

// signalled reports whether a signal ended ctx, one from signalContext.
func signalled(ctx context.Context) bool {
	return errors.As(context.Cause(ctx), new(signalCause))
}

// interruptCode is the exit code and the words for a wait that ctx's
// signal ended: 128+N for signal N (130 for SIGINT, 143 for SIGTERM).
func interruptCode(ctx context.Context) (int, string) {
	var sc signalCause
	if errors.As(context.Cause(ctx), &sc) {
		if n, ok := sc.sig.(syscall.Signal); ok {
			return 128 + int(n), "interrupted by " + sigName(sc.sig)
		}
	}
	return exitInterrupted, "interrupted"
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// holdUntilSignal holds the lease until a signal or until it ends.
func holdUntilSignal(l *lease.Lease, sigs <-chan os.Signal, gone <-chan string, p *printer) error {
	select {
	case s := <-sigs:
		p.note("signal", fmt.Sprintf("received %s; releasing the lease", sigName(s)), func(r *record) { r.Signal = sigName(s) })
		return nil
	case <-l.Done():
		return leaseEnded(l, p)
	case why := <-gone:
		p.note("lease-gone", why+"; another instance may take the lease at once", func(r *record) { r.Key = l.Key() })
		return withCode(exitLeaseEnded, fmt.Errorf("the lease %s ended while held: %s", l.Key(), why))
	}
}

// leaseWatchInterval is how often hold reads its lease object back between
// renewals by default: a thirtieth of the TTL, from 100 ms to 1 s (one
// small GET a second at the default TTL).
func leaseWatchInterval(ttl time.Duration) time.Duration {
	return min(max(ttl/30, 100*time.Millisecond), time.Second)
}

// watchLease reads the lease object every interval (never, if interval is
// 0) while ctx lasts, and sends on the channel it returns, once, why the
// lease is no longer this holder's: the object is gone or names another
// instance (or is no lease record at all). Nothing of bucketlease deletes a
// held lease, and nothing but a takeover or break replaces it; a tool that
// deleted it (a sync with --delete, a clean-up) has let the next contender
// in at once, without waiting for this holder's fence. A read that fails is
// no evidence and is ignored: the renewals handle the service's errors.
func watchLease(ctx context.Context, l *lease.Lease, b driver.Bucket, prefix string, interval time.Duration) <-chan string {
	out := make(chan string, 1)
	if interval <= 0 {
		return out
	}
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-l.Done():
				return
			case <-t.C:
			}
			before := l.Version()
			rctx, cancel := context.WithTimeout(ctx, max(interval, l.TTL()/10))
			st, err := lease.Inspect(rctx, b, prefix, time.Now())
			cancel()
			if err != nil || ctx.Err() != nil {
				continue
			}
			if !l.MayWrite() { // fenced or ended meanwhile: that is what hold reports
				return
			}
			switch why, foreign := notOurs(st, l, before); {
			case foreign:
				// A takeover or a break: a renewal now lets the lease
				// learn it lost (ErrLost, or broken), and hold stops the
				// command as for any lost lease, without waiting for the
				// next renewal.
				rctx, cancel := l.Fence(ctx)
				_ = l.Renew(rctx)
				cancel()
				if l.Err() != nil {
					return
				}
			case why != "":
				out <- why
				return
			}
		}
	}()
	return out
}

// notOurs says why st, read back while holding l, shows a lease object
// that is gone or is no lease record, or "" if it may still be l's: its
// version is one l wrote, or it names l's instance (a renewal whose reply
// is on its way). foreign reports a lease record of another instance (a
// takeover, or a break), which the lease itself judges at a renewal.
func notOurs(st lease.Status, l *lease.Lease, before driver.Version) (why string, foreign bool) {
	if st.Version == before || st.Version == l.Version() {
		return "", false
	}
	switch {
	case st.Record != nil && st.Record.InstanceID != l.InstanceID():
		return "", true
	case st.State == lease.Free:
		return fmt.Sprintf("its lease object %s was deleted by something other than bucketlease (a sync tool with --delete, a clean-up)", st.Key), false
	case st.Record == nil:
		return fmt.Sprintf("its lease object %s was replaced by something that is not a lease record (%s)", st.Key, st.Reason), false
	}
	return "", false
}

// leaseEnded is the error for a lease that was fenced, lost or broken
// while held.
func leaseEnded(l *lease.Lease, p *printer) error {
	return withCode(exitLeaseEnded, fmt.Errorf("the lease %s ended while held: %s", l.Key(), endReason(l, p)))
}

// endReason says why the lease ended, in words.
func endReason(l *lease.Lease, p *printer) string {
	err := l.Err()
	switch {
	case p.broken.Load():
		return "it was broken by an operator (bucketlease break)"
	case errors.Is(err, lease.ErrInstanceInUse):
		return err.Error() + "; give each process its own --instance-id"
	case err == nil:
		return "it is held"
	default:
		return err.Error()
	}
}

// releaseAfter releases the lease after result (what hold or its command
// came to), reports the release only once it happened, and returns the
// error hold exits with: result, or, when the release failed and the lease
// had not ended anyway, the release failure (exit 125).
func releaseAfter(l *lease.Lease, loc *driver.Location, b driver.Bucket, prefix string, p *printer, result error) error {
	endedBefore := l.Err()
	ctx, cancel := context.WithTimeout(context.Background(), max(l.TTL(), 10*time.Second))
	defer cancel()
	relErr := l.Release(ctx)
	if relErr != nil {
		relErr = explainScheme(loc.Scheme, fmt.Errorf("could not release the lease %s: %w; it stays until its TTL (%v) runs out", l.Key(), relErr, l.TTL()))
		p.note("release-failed", relErr.Error(), func(r *record) { r.Key, r.Error = l.Key(), relErr.Error() })
		code, _ := codeOf(result)
		if code == exitLeaseEnded || errors.Is(result, errInterrupted) {
			return errors.Join(result, relErr)
		}
		if result != nil {
			if ee := (*exitErr)(nil); errors.As(result, &ee) && ee.err == nil {
				relErr = fmt.Errorf("%w (the command %s)", relErr, exitText(ee.code))
			} else {
				relErr = fmt.Errorf("%w; before that: %v", relErr, result)
			}
		}
		return withCode(exitReleaseFailed, relErr)
	}
	if errors.Is(endedBefore, lease.ErrLost) {
		return result // lost: there was nothing of ours to release
	}
	// Say "released" only if the lease object now says so.
	st, err := lease.Inspect(ctx, b, prefix, time.Now())
	switch {
	case err != nil:
		p.note("released", fmt.Sprintf("released lease %s (could not read it back: %v)", l.Key(), err), func(r *record) { r.Key = l.Key() })
	case st.Record != nil && st.Record.InstanceID == l.InstanceID() && st.State == lease.Released:
		p.note("released", fmt.Sprintf("released lease %s", l.Key()), func(r *record) { r.Key = l.Key() })
	case st.State == lease.Free:
		// Release never deletes the lease object: something else did,
		// and there was nothing of ours left to release.
		p.note("not-released", fmt.Sprintf("did not release lease %s: its lease object is gone, deleted by something other than bucketlease; there was nothing of ours to release", l.Key()),
			func(r *record) { r.Key, r.State = l.Key(), st.State.String() })
	case st.Record == nil:
		p.note("not-released", fmt.Sprintf("did not release lease %s: its lease object is no longer a lease record (%s); left alone", l.Key(), st.Reason),
			func(r *record) { r.Key, r.State = l.Key(), st.State.String() })
	default:
		p.note("not-released", fmt.Sprintf("did not release lease %s: it is %s, held by %s, no longer ours", l.Key(), st.State, holderText(st.Holder())),
			func(r *record) { r.Key, r.Holder, r.State = l.Key(), st.Holder(), st.State.String() })
	}
	return result
}

// exitText describes a command's exit code.
func exitText(code int) string {
	if code > 128 && code < 128+65 {
		return fmt.Sprintf("was killed by signal %s", sigName(syscall.Signal(code-128)))
	}
	return fmt.Sprintf("exited with status %d", code)
}

// holderText names a holder for people, saying who break is.
func holderText(id string) string {
	if id == lease.BreakerID {
		return "an operator (bucketlease break)"
	}
	return "instance " + id
}
