package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/mushroomdb/bucketlease/lease"
)

var holdCommand = &command{
	name:    "hold",
	args:    "URL [FLAGS] [-- COMMAND [ARGS...]]",
	summary: "take the lease and keep renewing it, until interrupted or while COMMAND runs",
	help: `Takes the lease on the URL's prefix ({prefix}/LEASE), keeps renewing it every
TTL/3 and prints each change on one line: acquired, took-over, renewal-failed,
fenced, lost, released (renewed too with -v). Ctrl-C (SIGINT) or SIGTERM
releases the lease and exits 0.

If another instance holds the lease, hold names it, says when the lease could
be taken over, and exits 3; with --wait it keeps trying (as one instance, with
one id) until it can take the lease.

With a COMMAND after "--", hold runs it only while the lease is held: it starts
it once the lease is taken, passes SIGINT, SIGTERM and SIGHUP on to it, and the
moment the lease ends (fenced, or lost to another instance) it stops it:
SIGTERM to its process group, then SIGKILL after --grace. When the command has
exited, hold sends SIGTERM to anything it left running in its process group,
releases the lease and exits with the command's status, or with 124 if the
lease ended under it. The command runs in its own process group,
and on Linux it is killed if hold itself dies (the lease would no longer be
renewed).

Examples:
  bucketlease hold file:///var/backups/db1
  bucketlease hold 's3://my-bucket/backups/db1?region=eu-west-1' --ttl 30s --wait
  bucketlease hold file:///var/backups/db1 --wait -- ./backup.sh --full
  bucketlease hold file:///var/backups/db1 --json --instance-id "$(hostname)" -- rsync -a data/ /mnt/backup/`,
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
	logLevel    string
}

func setupHold(fs *flag.FlagSet) runFunc {
	f := &holdFlags{}
	fs.DurationVar(&f.ttl, "ttl", lease.DefaultTTL, "how long the lease stays fresh after each renewal; a whole number of seconds, 1s to 1h")
	fs.StringVar(&f.instanceID, "instance-id", "", "this instance's id in the LEASE object; keep one per machine so a restart recognises its own lease (default: random)")
	fs.BoolVar(&f.wait, "wait", false, "if the lease is held, keep trying until it can be taken")
	fs.DurationVar(&f.waitTimeout, "wait-timeout", 0, "with --wait, give up (exit 3) after this long; 0 waits until interrupted")
	fs.DurationVar(&f.grace, "grace", 10*time.Second, "when the lease ends under COMMAND, how long after SIGTERM to send SIGKILL")
	fs.BoolVar(&f.verbose, "v", false, "also print every renewal")
	fs.BoolVar(&f.verbose, "verbose", false, "same as -v")
	fs.BoolVar(&f.json, "json", false, "print events as JSON lines")
	fs.StringVar(&f.logLevel, "log-level", "warn", "log level on stderr: debug, info, warn or error")
	return func(ctx context.Context, e *env, args []string) error {
		pos, command, err := parseArgs(fs, args)
		if err != nil {
			return err
		}
		if len(pos) != 1 {
			return usageErrorf("hold needs one URL, then the command after --, such as: bucketlease hold file:///var/backups/db1 -- ./backup.sh")
		}
		if f.grace < 0 || f.waitTimeout < 0 {
			return usageErrorf("--grace and --wait-timeout cannot be negative")
		}
		return hold(ctx, e, f, pos[0], command)
	}
}

// holdSignals are the signals hold acts on: they release the lease, or are
// passed on to the command.
var holdSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

func hold(ctx context.Context, e *env, f *holdFlags, rawURL string, command []string) error {
	logger, err := newLogger(e.stderr, f.logLevel, f.json)
	if err != nil {
		return err
	}
	p := &printer{w: e.stdout, json: f.json, verbose: f.verbose}
	b, prefix, err := openURL(ctx, rawURL)
	if err != nil {
		return err
	}
	c, err := lease.NewContender(b, prefix, &lease.Options{TTL: f.ttl, InstanceID: f.instanceID,
		Logger: logger, OnEvent: p.event, Getenv: e.getenv})
	if err != nil {
		return usageErrorf("%v", err)
	}
	// Until the lease is held, a signal stops the attempt.
	waitCtx, stopWaiting := signal.NotifyContext(ctx, holdSignals...)
	l, err := acquire(waitCtx, c, f, p)
	if err != nil {
		stopWaiting()
		return explain(rawURL, err)
	}
	if waitCtx.Err() != nil && ctx.Err() == nil { // a signal came as the lease was taken
		stopWaiting()
		return errors.Join(withCode(exitInterrupted, errors.New("interrupted as the lease was taken; released it")), release(l, rawURL))
	}
	// From here on, signals are ours to handle: registered before the
	// NotifyContext above lets go of them, so none is missed.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, holdSignals...)
	defer signal.Stop(sigs)
	stopWaiting()
	p.note("holding", fmt.Sprintf("holding lease %s on %s as instance %s: ttl %v, renewing every %v, exclusion %s",
		l.Key(), displayURL(rawURL), l.InstanceID(), l.TTL(), (l.TTL()/3).Round(time.Millisecond), l.Exclusion()),
		func(r *record) {
			r.Key, r.Instance, r.TTLSeconds, r.Exclusion = l.Key(), l.InstanceID(), int64(l.TTL()/time.Second), l.Exclusion().String()
		})

	keepCtx, stopKeeping := context.WithCancel(ctx)
	kept := make(chan error, 1)
	go func() { kept <- l.Keep(keepCtx) }()
	var result error
	if len(command) == 0 {
		result = holdUntilSignal(l, sigs, p)
	} else {
		result = runUnderLease(e, l, command, sigs, f.grace, p)
	}
	stopKeeping()
	<-kept
	return errors.Join(result, release(l, rawURL))
}

// acquire takes the lease, or with --wait keeps trying until it can.
func acquire(ctx context.Context, c *lease.Contender, f *holdFlags, p *printer) (*lease.Lease, error) {
	if f.wait && f.waitTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.waitTimeout)
		defer cancel()
	}
	var last *lease.HeldError
	failures := 0
	for {
		l, err := c.Acquire(ctx)
		var held *lease.HeldError
		switch {
		case err == nil:
			return l, nil
		case ctx.Err() != nil:
			return nil, stoppedWaiting(ctx, last)
		case errors.As(err, &held):
			failures = 0
			if !f.wait {
				return nil, withCode(exitHeld, fmt.Errorf("%w\nRun with --wait to take it over when it is free.", err))
			}
			if f.verbose || last == nil || last.Holder() != held.Holder() || last.State != held.State {
				p.held(held, true)
			}
			last = held
		case f.wait && retriable(err) && failures < maxWaitFailures:
			failures++
			p.note("retrying", fmt.Sprintf("acquire failed (%d of %d in a row): %v", failures, maxWaitFailures, err), nil)
		default:
			return nil, err
		}
		if err := sleep(ctx, retryDelay(held, failures)); err != nil {
			return nil, stoppedWaiting(ctx, last)
		}
	}
}

// maxWaitFailures bounds how many acquire errors in a row (other than a
// held lease) --wait rides out.
const maxWaitFailures = 5

// retriable reports whether an acquire error may pass: not a service that
// ignores preconditions, and not a wrong setting.
func retriable(err error) bool {
	return !errors.Is(err, lease.ErrPreconditionsIgnored) && !errors.Is(err, context.Canceled)
}

// retryDelay is how long --wait sleeps before the next attempt: until the
// lease could be taken over (a little after), or a backoff after an error.
func retryDelay(held *lease.HeldError, failures int) time.Duration {
	if held == nil {
		return time.Duration(1<<min(failures, 5)) * time.Second
	}
	return max(held.TakeoverAt.Sub(held.Now)+100*time.Millisecond, 250*time.Millisecond)
}

// stoppedWaiting is the error for a wait that a signal or --wait-timeout
// ended.
func stoppedWaiting(ctx context.Context, last *lease.HeldError) error {
	why := "interrupted"
	code := exitInterrupted
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		why, code = "--wait-timeout passed", exitHeld
	}
	if last != nil {
		return withCode(code, fmt.Errorf("%s before the lease could be taken: %w", why, last))
	}
	return withCode(code, fmt.Errorf("%s before the lease could be taken", why))
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
func holdUntilSignal(l *lease.Lease, sigs <-chan os.Signal, p *printer) error {
	select {
	case s := <-sigs:
		p.note("signal", fmt.Sprintf("received %v; releasing the lease", s), func(r *record) { r.Signal = s.String() })
		return nil
	case <-l.Done():
		return leaseEnded(l)
	}
}

// leaseEnded is the error for a lease that was fenced or lost while held.
func leaseEnded(l *lease.Lease) error {
	return withCode(exitLeaseEnded, fmt.Errorf("the lease %s ended while held: %w", l.Key(), l.Err()))
}

// release releases the lease, bounded in time, and reports a failure with
// what it means for the next holder.
func release(l *lease.Lease, rawURL string) error {
	ctx, cancel := context.WithTimeout(context.Background(), max(l.TTL(), 10*time.Second))
	defer cancel()
	if err := l.Release(ctx); err != nil {
		return explain(rawURL, fmt.Errorf("%w; the lease stays until its TTL (%v) runs out", err, l.TTL()))
	}
	return nil
}
