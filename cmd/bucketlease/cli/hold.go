package cli

import (
	"context"
	"errors"
	"flag"
	"slices"
	"time"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/exitcode"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/holding"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/report"
	"github.com/mushroomdb/bucketlease/internal/location"
	"github.com/mushroomdb/bucketlease/lease"
	"github.com/mushroomdb/bucketlease/lease/admin"
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
process did not write (another process with the same id, or a restart of
this one) makes hold exit 6 at once, saying both; with --wait, hold takes it
over once it is stale, and exits 6 as soon as it sees another process renew
it: give each process its own id.

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
	fs.IntVar(&f.conflict, "E", exitcode.Held, "the exit code when another instance holds the lease (as flock -E); 1 to 255")
	fs.IntVar(&f.conflict, "conflict-exit", exitcode.Held, "the exit code when another instance holds the lease (same as -E); 1 to 255")
	fs.IntVar(&f.lost, "lost-exit", exitcode.LeaseEnded, "the exit code when the lease was lost, fenced or broken while held; 1 to 255")
	fs.StringVar(&f.stateDir, "state-dir", "", "where this instance keeps its lock and notes between runs, so that a restart with the same --instance-id takes back the lease it left at once and a suspect LEASE is watched across runs (default: $XDG_STATE_HOME/bucketlease, else ~/.local/state/bucketlease; none turns it off); on a local file system")
	durationVar(fs, &f.watchEvery, "watch", 0, "how often to read the lease object back between renewals, to stop the command at once if something else deleted or replaced it (default: TTL/30, 100ms to 1s; 0 turns it off)")
	run := func(ctx context.Context, e *env, args []string) error {
		pos, command, err := parseArgs(fs, args)
		if err != nil {
			return err
		}
		if len(pos) != 1 {
			return exitcode.Usagef("hold needs one URL, then the command after --, such as: bucketlease hold file:///var/backups/db1 -- ./backup.sh")
		}
		if err := f.check(fs); err != nil {
			return err
		}
		if (len(command) == 0 && slices.Contains(args, "--")) || (len(command) > 0 && command[0] == "") {
			return exitcode.Usagef("hold: the command after -- is empty (an unset variable, such as -- $CMD?); name a command, or leave out the -- to hold the lease until interrupted")
		}
		// The URL is parsed once: the driver, the messages and the state
		// directory read loc.
		loc, err := location.Parse(pos[0])
		if err != nil {
			return err
		}
		if err := refuseInProcess("hold", loc); err != nil {
			return err
		}
		if f.instanceID == admin.BreakerID {
			return exitcode.Usagef("--instance-id %s is the id bucketlease break writes into the records it leaves; show would call this holder \"broken by an operator\". Choose another, such as the host name", admin.BreakerID)
		}
		if len(command) > 0 && !holding.CommandSupported {
			return exitcode.Usagef("hold -- COMMAND needs a Unix system: there is no watchdog for this one yet; run hold without a command")
		}
		return f.remap(hold(ctx, e, f, loc, command))
	}
	return func(ctx context.Context, e *env, args []string) error {
		err := run(ctx, e, args)
		// With --json, every outcome ends with an exit event; hold writes
		// its own once its events are open. One that stopped before (a
		// usage error, the flag package's among them, which may have come
		// before --json on the command line) is reported here, on stderr.
		if !f.reported && (f.json || wantsJSON(args)) && !errors.Is(err, flag.ErrHelp) {
			report.NewPrinter(e.stderr, true, false).Exit(err)
		}
		return err
	}
}

// remap gives hold's own "held" and "lease ended" outcomes the codes
// chosen with -E and --lost-exit. A command's own exit status (an exitcode.Error
// without an error) is never changed.
func (f *holdFlags) remap(err error) error {
	var ee *exitcode.Error
	if errors.As(err, &ee) && ee.Err != nil {
		switch ee.Code {
		case exitcode.Held:
			ee.Code = f.conflict
		case exitcode.LeaseEnded:
			ee.Code = f.lost
		}
	}
	return err
}

// check refuses flag values outside their documented range.
func (f *holdFlags) check(fs *flag.FlagSet) error {
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	switch {
	case f.ttl < time.Second || f.ttl > admin.MaxSaneTTL:
		return exitcode.Usagef("--ttl %v: the TTL is a whole number of seconds from 1s to %v", f.ttl, admin.MaxSaneTTL)
	case f.ttl%time.Second != 0:
		return exitcode.Usagef("--ttl %v: the TTL is a whole number of seconds from 1s to %v", f.ttl, admin.MaxSaneTTL)
	case f.grace < 0:
		return exitcode.Usagef("--grace %v: it cannot be negative", f.grace)
	case f.waitTimeout < 0:
		return exitcode.Usagef("--wait-timeout %v: it cannot be negative", f.waitTimeout)
	case set["wait-timeout"] && !f.wait:
		return exitcode.Usagef("--wait-timeout works only with --wait")
	case f.conflict < 1 || f.conflict > 255:
		return exitcode.Usagef("-E %d: an exit code is 1 to 255", f.conflict)
	case f.lost < 1 || f.lost > 255:
		return exitcode.Usagef("--lost-exit %d: an exit code is 1 to 255", f.lost)
	case f.watchEvery < 0:
		return exitcode.Usagef("--watch %v: it cannot be negative (0 turns the watch off)", f.watchEvery)
	}
	if !set["watch"] {
		f.watchEvery = holding.WatchInterval(f.ttl)
	}
	return nil
}
