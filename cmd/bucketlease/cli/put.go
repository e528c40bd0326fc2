package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/exitcode"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/put"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/internal/location"
	"github.com/mushroomdb/bucketlease/lease"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// putExitCodesHelp documents put's exit codes.
const putExitCodesHelp = `Exit codes:
  0    stored: the version it created is printed on stdout (and the size and SHA-256 on stderr)
  1    an error: the URL, the credentials, the service, the network, reading FILE, or no hold to talk to
  2    a usage error (also the key LEASE, a scratch key of the lease, either under a prefix further down without
       --overwrite-lease-object, --concurrency below 1)
  3    put URL: another instance holds the lease (without --wait, or --wait-timeout passed)
  4    refused: the key exists (--if-absent, the default) or has another version than --if-match names; nothing was written
  5    put URL: the service ignores write preconditions, so the lease refuses to run on it; nothing was written
  6    put URL: a fresh lease names this --instance-id but this process did not write it: another live process holds it
       under the same id, or (without --wait) this instance's previous process died and left it; with --wait, the record
       was seen renewed: another live process holds it, waiting would not help
  7    put -- COMMAND: the producer exited non-zero or was killed by a signal; the upload was aborted, nothing was written
  8    the input did not match --size or --sha256; the upload was aborted, nothing was written
  9    stored (size, SHA-256 and version on stderr), but the version could not be written to stdout
  11   stored (its version printed), but the service answered only after the lease was fenced (put was paused, or its request
       held up): the object may have landed after another holder took over, a late write; bucketlease list --late tells
  124  the lease was fenced, lost or released before the object was committed: the upload was aborted, and the key held
       nothing of this lease's when put read it back (a request already on its way may still land: bucketlease list --late)
  125  put URL: the object was stored (its version printed) but the lease could not be released
  126  put -- COMMAND: the producer cannot be run; nothing was written
  127  put -- COMMAND: the producer was not found; nothing was written
  128+N  stopped by signal N (130 SIGINT, 143 SIGTERM, 129 SIGHUP; the signal goes on to the producer): the upload was aborted, nothing was written
`

var putCommand = &command{
	name:    "put",
	args:    "[URL] KEY [FILE|-] [FLAGS] [-- COMMAND [ARGS...]]",
	summary: "stream a producer's output, FILE or stdin into an object under the lease (inside hold, or taking it)",
	help: `Streams the output of COMMAND (after --), or FILE, or stdin (for - or no FILE)
into the object KEY under the lease's prefix ({prefix}/KEY), in parts, and
prints the version it created on stdout, and the size and SHA-256 of what it
stored on stderr. The write is fenced: no part and no commit starts once the
lease may no longer write, a part in flight is cancelled at the fence, and a
cut-off upload is aborted, so nothing of it is left and no object appears.

With "-- COMMAND", put runs the producer itself (its stdin and stderr are
put's) and commits only once it has exited with status 0: a producer that
exits non-zero or is killed aborts the upload (exit 7), one that cannot be
found or run is refused before anything is taken or written (127, 126).
SIGINT, SIGTERM and SIGHUP to put go on to the producer; put aborts and exits
128+N. The producer runs as hold runs its command, under the watchdog (in a
new PID namespace on Linux where allowed; --pid-namespace=false runs it
without one): however put ends, the producer and everything it started get
SIGTERM, SIGKILL 5s later, and put exits only once none is left; if put is
killed, the watchdog kills them all. Use this form for backups: a pipe's end cannot tell a producer that
finished from one that died, so "pg_dump db1 | bucketlease put ..." commits
whatever a failed pg_dump wrote, unless --size or --sha256 says what to
expect. --size and --sha256 check the input (of any form) before the commit;
a mismatch aborts (exit 8).

Inside "bucketlease hold URL -- COMMAND", the command (or anything it starts)
runs "bucketlease put KEY [FILE|-] [-- PRODUCER]": put talks to its hold over
the Unix socket hold names in $BUCKETLEASE_PUT_SOCKET (in a private directory
that hold removes at exit) and the upload runs under hold's own lease.
Release waits for it. If the lease ends mid-upload, hold aborts the upload and
its watchdog stops the command as usual.

With a URL first ("://" in the first argument), put takes the lease itself
(as hold does, with --wait, --ttl and --instance-id), streams, releases and
exits: "bucketlease put URL KEY [FILE|-]". Inside hold this takes a lease of
its own, so give it another prefix than hold's: put URL on the prefix of the
hold that runs it is refused at once (exit 2), since it would wait for its own
parent. A put --wait that finds the lease held says once, on stderr, who
holds it.

The object is written only if it is absent (--if-absent, the default: a
restore point is never overwritten; a key that exists is refused with one
read before the body is read), or if its version is --if-match's, or
unconditionally with --overwrite. The key LEASE and the lease's scratch keys
are refused (exit 2), and so is a key named as one under any prefix further
down (sub/LEASE, sub/LEASE.acquire-probe-…), which hold, show and list read
as the lease of URL/sub: writing it would replace or forge that lease,
whoever holds it. --overwrite-lease-object lets put write such a nested key. Progress (bytes so far and the rate) goes to stderr a
few times a second when stderr is a terminal, and nowhere otherwise; -v
reports put URL's lease events too.

` + putExitCodesHelp + `
Examples:
  bucketlease put 's3://my-bucket/backups/db1?region=eu-west-1' dumps/db1.sql --wait -- pg_dump db1
  bucketlease hold file:///var/backups/db1 --wait -- bucketlease put dumps/db1.sql -- pg_dump db1
  bucketlease put file:///var/backups/db1 dumps/db1.sql db1.sql --sha256 "$(sha256sum < db1.sql | cut -c1-64)"
  bucketlease put file:///var/backups/db1 manifest.json manifest.json --if-match "$VERSION"`,
	setup: setupPut,
}

type putFlags struct {
	w           put.Flags // the write's condition and parts
	leaseObject bool      // --overwrite-lease-object: a key named as a nested lease's own
	verbose     bool
	sha256      string
	size        int64
	pidNS       bool      // put -- COMMAND: the producer in a PID namespace where allowed
	hold        holdFlags // put URL's lease: ttl, instance id, wait
}

func setupPut(fs *flag.FlagSet) runFunc {
	f := &putFlags{}
	fs.BoolVar(&f.w.IfAbsent, "if-absent", false, "write only if KEY does not exist (If-None-Match: *); the default")
	fs.StringVar(&f.w.IfMatch, "if-match", "", "write only if KEY's current version is this one (as a previous put printed it)")
	fs.BoolVar(&f.w.Overwrite, "overwrite", false, "write whatever is there")
	fs.BoolVar(&f.leaseObject, "overwrite-lease-object", false, "allow a KEY named as the lease object or a scratch key of a prefix further down (sub/LEASE), which replaces or forges that prefix's lease whoever holds it")
	fs.Var(put.Size{N: &f.w.PartSize}, "part-size", "the size of each part, in bytes or with KiB, MiB, GiB (at least 5MiB, the default); memory is part size × concurrency")
	fs.IntVar(&f.w.Concurrency, "concurrency", 0, "how many parts are uploaded at once, 1 to 256 (default 2)")
	fs.StringVar(&f.sha256, "sha256", "", "commit only if the input's SHA-256 is this (64 hex digits); otherwise abort, exit 8")
	fs.Var(put.Size{N: &f.size}, "size", "commit only if the input is exactly this many bytes; otherwise abort, exit 8")
	fs.BoolVar(&f.pidNS, "pid-namespace", true, "put -- COMMAND, on Linux: run the producer in a new PID namespace where allowed, as hold runs its command; false runs it without one (so that it can signal processes outside), as where none is allowed")
	fs.BoolVar(&f.verbose, "v", false, "put URL: also report the lease's events on stderr")
	fs.BoolVar(&f.verbose, "verbose", false, "put URL: also report the lease's events on stderr")
	durationVar(fs, &f.hold.ttl, "ttl", lease.DefaultTTL, "put URL: the lease's TTL; a whole number of seconds, 1s to 1h")
	fs.StringVar(&f.hold.instanceID, "instance-id", "", "put URL: this instance's id in the LEASE object (default: random)")
	fs.BoolVar(&f.hold.wait, "wait", false, "put URL: if the lease is held, keep trying until it can be taken")
	durationVar(fs, &f.hold.waitTimeout, "wait-timeout", 0, "put URL: with --wait, give up (exit 3) after this long; 0 waits until interrupted")
	return func(ctx context.Context, e *env, args []string) error {
		return runPut(ctx, e, fs, f, args)
	}
}

// A putPlan is what put's arguments ask for: the header of the write, the
// input, and where it goes: through the lease at loc (put URL, oneShot) or
// through the hold whose socket is sock (put KEY inside hold).
type putPlan struct {
	cond    put.Header
	in      put.Input
	file    string // FILE, or "-" for stdin
	oneShot bool
	loc     *location.Location
	sock    string
}

// runPut checks put's arguments, opens its input, streams it, and reports
// the version stored: on stderr with its size and sum, and alone on stdout.
func runPut(ctx context.Context, e *env, fs *flag.FlagSet, f *putFlags, args []string) error {
	pl, err := planPut(e, fs, f, args)
	if err != nil {
		return err
	}
	cond, in := pl.cond, &pl.in
	if in.Argv != nil {
		// Before the lease is taken and anything is written: a
		// mistyped producer is refused at once.
		if in.Path, err = put.LookProducer(in.Argv[0]); err != nil {
			return err
		}
	} else if pl.file != "-" {
		// FILE is opened now, so that a missing one is an error
		// before the lease is taken.
		fh, err := os.Open(pl.file)
		if err != nil {
			return err
		}
		defer fh.Close()
		in.File = fh
	}
	put.IgnorePipeSignal()
	prog := put.StartProgress(e.stderr, cond.Key)
	defer prog.Stop()
	in.Count = prog.Count
	var (
		v    driver.Version
		body *put.Body
	)
	if pl.oneShot {
		if e.getenv("GOMEMLIMIT") == "" {
			defer put.LimitHeap(cond)()
		}
		v, body, err = putOneShot(ctx, e, f, pl.loc, cond, in)
	} else {
		v, body, err = putViaHold(ctx, pl.sock, cond, in)
	}
	prog.Stop()
	if v == "" {
		return err
	}
	fmt.Fprintf(e.stderr, "put %s: stored %d bytes, sha256 %s, version %s\n", cond.Key, body.N(), body.Sum(), v)
	if _, werr := fmt.Fprintln(e.stdout, v); werr != nil {
		lost := exitcode.With(exitcode.VersionLost, fmt.Errorf("put %s: the object was stored (version %s, on stderr above), but its version could not be written to stdout: %w; the object stays: read it with bucketlease get", cond.Key, v, werr))
		if err != nil {
			return errors.Join(err, lost) // 125: the lease, too
		}
		return lost
	}
	return err
}

// planPut checks put's arguments and flags, and says what they ask for.
func planPut(e *env, fs *flag.FlagSet, f *putFlags, args []string) (*putPlan, error) {
	pos, after, err := parseArgs(fs, args)
	if err != nil {
		return nil, err
	}
	hasCommand := slices.Contains(args, "--")
	if hasCommand && len(after) == 0 {
		return nil, exitcode.Usagef("put: nothing after --: give the producer, as in put URL KEY -- pg_dump db1 (an unset $CMD leaves it empty)")
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	pl := &putPlan{}
	if pl.cond, err = f.w.Header(set); err != nil {
		return nil, err
	}
	pl.in = put.Input{Stderr: e.stderr, Self: e.self, PIDNS: f.pidNS, Check: put.Check{Size: f.size, HasSize: set["size"]}, SignalOf: signalOf}
	if set["sha256"] {
		if pl.in.Check.SHA256, err = put.ParseSHA256(f.sha256); err != nil {
			return nil, exitcode.Usagef("%v", err)
		}
	}
	pl.oneShot = len(pos) > 0 && strings.Contains(pos[0], "://")
	rawURL, got := "", len(pos)
	if pl.oneShot {
		rawURL, pos = pos[0], pos[1:]
	}
	if len(pos) < 1 || len(pos) > 2 {
		return nil, exitcode.Usagef("put takes KEY [FILE|-] [-- COMMAND] inside hold, or URL KEY [FILE|-] [-- COMMAND]; got %d arguments", got)
	}
	pl.cond.Key = pos[0]
	if err := checkPutKey(pl.cond.Key, f.leaseObject); err != nil {
		return nil, err
	}
	pl.file = "-"
	if len(pos) == 2 {
		pl.file = pos[1]
	}
	if hasCommand {
		if len(pos) == 2 && pl.file != "-" {
			return nil, exitcode.Usagef("put %s: FILE %s and a producer after --: give one; the producer's output is the object", pl.cond.Key, pl.file)
		}
		pl.in.Argv = after
	}
	pl.sock = e.getenv(put.SocketEnv)
	if err := pl.checkLease(fs, f, set, rawURL); err != nil {
		return nil, err
	}
	return pl, nil
}

// checkLease checks the flags and arguments of the lease the put runs
// under: put KEY needs a hold to talk to and takes no lease flags; put URL
// parses its URL (into pl.loc) and checks its lease flags.
func (pl *putPlan) checkLease(fs *flag.FlagSet, f *putFlags, set map[string]bool, rawURL string) error {
	if !pl.oneShot {
		if pl.sock == "" {
			return exitcode.Usagef("put %s: no hold to talk to ($%s is not set): run put inside \"bucketlease hold URL -- COMMAND\", or give the URL first: bucketlease put URL %s [FILE|-]",
				pl.cond.Key, put.SocketEnv, pl.cond.Key)
		}
		for _, n := range []string{"ttl", "instance-id", "wait", "wait-timeout", "v", "verbose"} {
			if set[n] {
				return exitcode.Usagef("put KEY inside hold: --%s is for put URL; the lease is hold's", n)
			}
		}
		return nil
	}
	f.hold.conflict, f.hold.lost = exitcode.Held, exitcode.LeaseEnded
	if err := f.hold.check(fs); err != nil {
		return err
	}
	var err error
	if pl.loc, err = location.Parse(rawURL); err != nil {
		return err
	}
	if err := refuseInProcess("put", pl.loc); err != nil {
		return err
	}
	if f.hold.instanceID == admin.BreakerID {
		return exitcode.Usagef("--instance-id %s is the id bucketlease break writes; choose another", admin.BreakerID)
	}
	return nil
}

// checkPutKey refuses, as a usage error, a key that a lease reads as its
// own (leaseKeyOf): the lease object of the URL's prefix and the scratch
// keys beside it always, and those of a prefix further down, such as
// sub/LEASE, which hold, show and list read as the lease of URL/sub,
// unless allowed (--overwrite-lease-object).
func checkPutKey(key string, allowed bool) error {
	p, kind := leaseKeyOf(key)
	switch {
	case kind == notLeaseKey:
		return nil
	case p == "" && kind == leaseObjectKey:
		return exitcode.Usagef("put %s: that is the lease object itself, which only the lease writes; nothing was written: choose another key", key)
	case p == "":
		return exitcode.Usagef("put %s: that name is one of the scratch keys the lease writes beside its LEASE object (and deletes); nothing was written: choose another key", key)
	case allowed:
		return nil
	case kind == leaseObjectKey:
		return exitcode.Usagef("put %s: that key is the lease object of the prefix %s below this one: hold, show and list read it as that prefix's lease, so writing it would replace or forge the lease whoever holds it; nothing was written. Choose another key, or pass --overwrite-lease-object if you mean to write that lease object",
			key, p)
	}
	return exitcode.Usagef("put %s: that name is one of the scratch keys that the lease of the prefix %s below this one writes beside its LEASE object (and deletes); nothing was written. Choose another key, or pass --overwrite-lease-object if you mean to write it",
		key, p)
}
