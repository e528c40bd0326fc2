package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/lease"
)

// exitPutRefused: put: the write's condition did not hold (the key exists,
// or has another version than --if-match names); nothing was written.
const exitPutRefused = exitRefused

// putExitCodesHelp documents put's exit codes.
const putExitCodesHelp = `Exit codes:
  0    stored: the version it created is printed on stdout (and the size and SHA-256 on stderr)
  1    an error: the URL, the credentials, the service, the network, reading FILE, or no hold to talk to
  2    a usage error (also the key LEASE, a scratch key of the lease, --concurrency below 1)
  3    put URL: another instance holds the lease (without --wait, or --wait-timeout passed)
  4    refused: the key exists (--if-absent, the default) or has another version than --if-match names; nothing was written
  6    put URL: another live process holds the lease under the same --instance-id
  7    put -- COMMAND: the producer exited non-zero or was killed by a signal; the upload was aborted, nothing was written
  8    the input did not match --size or --sha256; the upload was aborted, nothing was written
  9    stored (size, SHA-256 and version on stderr), but the version could not be written to stdout
  124  the lease was fenced, lost or released before the object was committed: the upload was aborted, nothing was written
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
128+N. Use this form for backups: a pipe's end cannot tell a producer that
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
are refused (exit 2). Progress (bytes so far and the rate) goes to stderr a
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
	ifAbsent    bool
	ifMatch     string
	overwrite   bool
	partSize    int64
	concurrency int
	verbose     bool
	sha256      string
	size        int64
	hold        holdFlags // put URL's lease: ttl, instance id, wait
}

func setupPut(fs *flag.FlagSet) runFunc {
	f := &putFlags{}
	fs.BoolVar(&f.ifAbsent, "if-absent", false, "write only if KEY does not exist (If-None-Match: *); the default")
	fs.StringVar(&f.ifMatch, "if-match", "", "write only if KEY's current version is this one (as a previous put printed it)")
	fs.BoolVar(&f.overwrite, "overwrite", false, "write whatever is there")
	fs.Var(sizeValue{&f.partSize}, "part-size", "the size of each part, in bytes or with KiB, MiB, GiB (at least 5MiB; default 16MiB); memory is part size × concurrency")
	fs.IntVar(&f.concurrency, "concurrency", 0, "how many parts are uploaded at once, 1 to 256 (default 4)")
	fs.StringVar(&f.sha256, "sha256", "", "commit only if the input's SHA-256 is this (64 hex digits); otherwise abort, exit 8")
	fs.Var(sizeValue{&f.size}, "size", "commit only if the input is exactly this many bytes; otherwise abort, exit 8")
	fs.BoolVar(&f.verbose, "v", false, "put URL: also report the lease's events on stderr")
	fs.BoolVar(&f.verbose, "verbose", false, "put URL: also report the lease's events on stderr")
	durationVar(fs, &f.hold.ttl, "ttl", lease.DefaultTTL, "put URL: the lease's TTL; a whole number of seconds, 1s to 1h")
	fs.StringVar(&f.hold.instanceID, "instance-id", "", "put URL: this instance's id in the LEASE object (default: random)")
	fs.BoolVar(&f.hold.wait, "wait", false, "put URL: if the lease is held, keep trying until it can be taken")
	durationVar(fs, &f.hold.waitTimeout, "wait-timeout", 0, "put URL: with --wait, give up (exit 3) after this long; 0 waits until interrupted")
	return func(ctx context.Context, e *env, args []string) error {
		pos, after, err := parseArgs(fs, args)
		if err != nil {
			return err
		}
		hasCommand := slices.Contains(args, "--")
		if hasCommand && len(after) == 0 {
			return usageErrorf("put: nothing after --: give the producer, as in put URL KEY -- pg_dump db1 (an unset $CMD leaves it empty)")
		}
		set := map[string]bool{}
		fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
		cond, err := f.header(set)
		if err != nil {
			return err
		}
		in := putInput{stderr: e.stderr, check: inputCheck{size: f.size, hasSize: set["size"]}}
		if set["sha256"] {
			if in.check.sha256, err = parseSHA256(f.sha256); err != nil {
				return usageErrorf("%v", err)
			}
		}
		oneShot := len(pos) > 0 && strings.Contains(pos[0], "://")
		rawURL := ""
		if oneShot {
			rawURL, pos = pos[0], pos[1:]
		}
		if len(pos) < 1 || len(pos) > 2 {
			return usageErrorf("put takes KEY [FILE|-] [-- COMMAND] inside hold, or URL KEY [FILE|-] [-- COMMAND]; got %d arguments", len(pos)+btoi(oneShot))
		}
		cond.Key = pos[0]
		if err := checkPutKey(cond.Key); err != nil {
			return err
		}
		in.file = "-"
		if len(pos) == 2 {
			in.file = pos[1]
		}
		if hasCommand {
			if len(pos) == 2 && in.file != "-" {
				return usageErrorf("put %s: FILE %s and a producer after --: give one; the producer's output is the object", cond.Key, in.file)
			}
			in.argv = after
		}
		sock := e.getenv(putSocketEnv)
		if !oneShot {
			if sock == "" {
				return usageErrorf("put %s: no hold to talk to ($%s is not set): run put inside \"bucketlease hold URL -- COMMAND\", or give the URL first: bucketlease put URL %s [FILE|-]",
					cond.Key, putSocketEnv, cond.Key)
			}
			for _, n := range []string{"ttl", "instance-id", "wait", "wait-timeout", "v", "verbose"} {
				if set[n] {
					return usageErrorf("put KEY inside hold: --%s is for put URL; the lease is hold's", n)
				}
			}
		} else {
			f.hold.conflict, f.hold.lost = exitHeld, exitLeaseEnded
			if err := f.hold.check(fs); err != nil {
				return err
			}
			if err := refuseInProcess("put", rawURL); err != nil {
				return err
			}
			if f.hold.instanceID == lease.BreakerID {
				return usageErrorf("--instance-id %s is the id bucketlease break writes; choose another", lease.BreakerID)
			}
		}
		if in.argv != nil {
			// Before the lease is taken and anything is written: a
			// mistyped producer is refused at once.
			if in.path, err = lookProducer(in.argv[0]); err != nil {
				return err
			}
		} else if in.file != "-" {
			// FILE is opened now, so that a missing one is an error
			// before the lease is taken.
			fh, err := os.Open(in.file)
			if err != nil {
				return err
			}
			defer fh.Close()
			in.opened = fh
		}
		ignorePipeSignal()
		prog := startProgress(e.stderr, cond.Key)
		defer prog.stop()
		in.count = prog.count
		var (
			v    driver.Version
			body *checkedReader
		)
		if oneShot {
			v, body, err = putOneShot(ctx, e, f, rawURL, cond, &in)
		} else {
			v, body, err = putViaHold(ctx, sock, cond, &in)
		}
		prog.stop()
		if v == "" {
			return err
		}
		fmt.Fprintf(e.stderr, "put %s: stored %d bytes, sha256 %s, version %s\n", cond.Key, body.n, body.sum(), v)
		if _, werr := fmt.Fprintln(e.stdout, v); werr != nil {
			lost := withCode(exitVersionLost, fmt.Errorf("put %s: the object was stored (version %s, on stderr above), but its version could not be written to stdout: %w; the object stays: read it with bucketlease get", cond.Key, v, werr))
			if err != nil {
				return errors.Join(err, lost) // 125: the lease, too
			}
			return lost
		}
		return err
	}
}

// checkPutKey refuses, as a usage error, a key that put must never write:
// the lease object, and the scratch keys the lease writes beside it.
func checkPutKey(key string) error {
	switch {
	case key == "LEASE":
		return usageErrorf("put %s: that is the lease object itself, which only the lease writes; choose another key", key)
	case lease.IsScratchKey(key):
		return usageErrorf("put %s: that name is one of the scratch keys the lease writes beside its LEASE object (and deletes); choose another key", key)
	}
	return nil
}

// putInput is where put's body comes from: FILE, stdin, or a producer
// run after "--", and what it is checked against before the commit.
type putInput struct {
	file   string
	opened *os.File // FILE, opened
	argv   []string // the producer, or nil
	path   string   // the producer's program, looked up
	check  inputCheck
	stderr io.Writer
	count  func(io.Reader) io.Reader // the progress's counter

	prod *producer
}

// open returns the body; for a producer, it starts it.
func (in *putInput) open(key string) (*checkedReader, io.Reader, error) {
	var r io.Reader = os.Stdin
	switch {
	case in.argv != nil:
		p, err := startProducer(in.path, in.argv, in.stderr)
		if err != nil {
			return nil, nil, err
		}
		in.prod, r = p, p.out
	case in.opened != nil:
		r = in.opened
	}
	body := newCheckedReader(r, key, in.prod, in.check)
	return body, in.count(body), nil
}

// close stops a producer whose output was not all read (the put failed),
// and waits for it.
func (in *putInput) close() { in.prod.stop(5 * time.Second) }

// forward passes the signal that ended ctx (a signalContext) on to the
// producer.
func (in *putInput) forward(ctx context.Context) {
	var sc signalCause
	if errors.As(context.Cause(ctx), &sc) {
		in.prod.signal(sc.sig)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// header checks the condition flags and returns the header they ask for.
func (f *putFlags) header(set map[string]bool) (putHeader, error) {
	n := 0
	for _, c := range []string{"if-absent", "if-match", "overwrite"} {
		if set[c] {
			n++
		}
	}
	switch {
	case n > 1:
		return putHeader{}, usageErrorf("put: --if-absent, --if-match and --overwrite exclude each other")
	case set["if-match"] && f.ifMatch == "":
		return putHeader{}, usageErrorf("put: --if-match needs a version, as a previous put printed it")
	case f.partSize < 0 || (f.partSize > 0 && f.partSize < driver.MinPartSize):
		return putHeader{}, usageErrorf("--part-size %d: a part is at least 5MiB (%d bytes)", f.partSize, driver.MinPartSize)
	case f.partSize > 5<<30:
		return putHeader{}, usageErrorf("--part-size %d: a part is at most 5GiB", f.partSize)
	case set["concurrency"] && (f.concurrency < 1 || f.concurrency > 256):
		return putHeader{}, usageErrorf("--concurrency %d: 1 to 256", f.concurrency)
	case f.concurrency > 256:
		return putHeader{}, usageErrorf("--concurrency %d: 1 to 256", f.concurrency)
	}
	h := putHeader{Cond: "if-absent", PartSize: f.partSize, Concurrency: f.concurrency}
	switch {
	case set["if-match"]:
		h.Cond, h.Version = "if-match", f.ifMatch
	case f.overwrite:
		h.Cond = "overwrite"
	}
	return h, nil
}

// ignorePipeSignal makes a write to a closed stdout an error put reports
// (exit 9) rather than a death by SIGPIPE, unless SIGPIPE was ignored
// anyway.
func ignorePipeSignal() {
	if !signal.Ignored(syscall.SIGPIPE) {
		signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	}
}

// putViaHold streams the body to the hold whose socket is sock and returns
// what it answered. A signal (SIGINT, SIGTERM, SIGHUP) goes on to the
// producer, cuts the body off (hold aborts the upload), and put exits
// 128+N.
func putViaHold(ctx context.Context, sock string, h putHeader, in *putInput) (driver.Version, *checkedReader, error) {
	conn, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		return "", nil, fmt.Errorf("put: cannot reach the hold that started this command (%s=%s): %w", putSocketEnv, sock, err)
	}
	defer conn.Close()
	hdr, err := jsonLine(h)
	if err != nil {
		return "", nil, err
	}
	if _, err := io.WriteString(conn, putMagic+" "+hdr); err != nil {
		return "", nil, fmt.Errorf("put: writing to hold: %w", err)
	}
	sigCtx, stopSignals := signalContext(ctx, holdSignals()...)
	defer stopSignals()
	checked, body, err := in.open(h.Key)
	if err != nil {
		return "", nil, err
	}
	defer in.close()
	replies := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(conn).ReadString('\n')
		replies <- line
	}()
	var bodyErr atomic.Value
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		buf := make([]byte, 1<<20)
		for {
			n, err := body.Read(buf)
			if n > 0 {
				if werr := writeChunk(conn, buf[:n]); werr != nil {
					return // hold stopped reading: its answer says why
				}
			}
			if err == io.EOF {
				// The end chunk: only now, after the producer's exit
				// status and the checks, may hold commit.
				if writeChunk(conn, nil) == nil {
					_ = conn.CloseWrite()
				}
				return
			}
			if err != nil {
				// No end chunk: hold aborts the upload.
				bodyErr.Store(err)
				_ = conn.CloseWrite()
				return
			}
		}
	}()
	var line string
	select {
	case line = <-replies:
	case <-sigCtx.Done():
		in.forward(sigCtx)
		// Cut the body off without its end chunk: hold aborts the
		// upload. Its answer still says whether it had committed.
		_ = conn.CloseWrite()
		line = <-replies
		if v, err := parseReply(h.Key, line); err == nil {
			return v, checked, nil // committed before the signal
		}
		code, why := interruptCode(sigCtx)
		return "", checked, withCode(code, fmt.Errorf("put %s: %s: the upload was aborted, nothing was written", h.Key, why))
	}
	v, err := parseReply(h.Key, line)
	if err != nil {
		// The input's own failure was recorded before the body was cut
		// off, so before hold answered; asked now, before the deferred
		// close stops a producer that hold's refusal left running.
		if ierr := inputCode(checked, nil); ierr != nil {
			return "", checked, ierr
		}
		if err, ok := bodyErr.Load().(error); ok {
			return "", checked, fmt.Errorf("%w; the upload was aborted, nothing was written", err)
		}
		return "", checked, err
	}
	<-sent // it sent the end chunk: its count and sum are final
	return v, checked, nil
}

// parseReply turns hold's answer into put's outcome.
func parseReply(key, line string) (driver.Version, error) {
	line = strings.TrimSuffix(line, "\n")
	if rest, ok := strings.CutPrefix(line, "ok "); ok {
		v, err := strconv.Unquote(rest)
		if err != nil {
			return "", fmt.Errorf("put %s: hold answered %q", key, line)
		}
		return driver.Version(v), nil
	}
	rest, ok := strings.CutPrefix(line, "error ")
	if !ok {
		return "", fmt.Errorf("put %s: hold closed the connection without an answer (it exited, or the lease ended); the upload, if it started, was aborted", key)
	}
	class, msg, _ := strings.Cut(rest, " ")
	return "", putError(class, fmt.Errorf("put %s: %s", key, msg))
}

// putError gives err the exit code of its class.
func putError(class string, err error) error {
	switch class {
	case putClassPrecondition:
		return withCode(exitPutRefused, err)
	case putClassFenced:
		return withCode(exitLeaseEnded, err)
	case putClassUsage:
		return withCode(exitUsage, err)
	}
	return err
}

// putOneShot takes the lease on rawURL, streams the body under it, and
// releases it.
func putOneShot(ctx context.Context, e *env, f *putFlags, rawURL string, h putHeader, in *putInput) (driver.Version, *checkedReader, error) {
	cond, err := h.condition()
	if err != nil {
		return "", nil, usageErrorf("%v", err)
	}
	loc, err := parseURL(rawURL)
	if err != nil {
		return "", nil, err
	}
	if err := fileLeaseNotObjectAt(loc); err != nil {
		return "", nil, err
	}
	b, err := openLocation(ctx, loc)
	if err != nil {
		return "", nil, err
	}
	prefix := loc.Prefix
	b = withDeadlines(b, requestTimeout(f.hold.ttl), loc.String(), "a third of the TTL")
	w := io.Discard
	if f.verbose {
		w = e.stderr
	}
	p := &printer{w: w, verbose: f.verbose}
	p.start()
	defer p.close(2 * time.Second)
	logger, err := newLogger(e.stderr, "off", false)
	if err != nil {
		return "", nil, err
	}
	c, err := lease.NewContender(b, prefix, &lease.Options{TTL: f.hold.ttl, InstanceID: f.hold.instanceID,
		Logger: logger, OnEvent: p.event, Getenv: e.getenv})
	if err != nil {
		return "", nil, usageErrorf("%v", err)
	}
	waitCtx, stopWaiting := signalContext(ctx, holdSignals()...)
	l, err := firstTry(waitCtx, e, c, h.Key, f.hold.wait)
	if err == nil && l == nil {
		l, err = acquire(waitCtx, c, b, prefix, &f.hold, p)
	}
	if err != nil {
		stopWaiting()
		return "", nil, explainScheme(loc.Scheme, err)
	}
	// A signal now cuts the upload off (it is aborted) and releases:
	// registered before the wait lets go of the signals, so none is
	// missed, and one that came as the lease was taken stops the put
	// before it uploads anything.
	upCtx, stopUp := signalContext(ctx, holdSignals()...)
	defer stopUp()
	stopWaiting()
	if signalled(waitCtx) && ctx.Err() == nil {
		code, why := interruptCode(waitCtx)
		return "", nil, releaseAfter(l, loc, b, prefix, p, withCode(code, fmt.Errorf("put %s: %s as the lease was taken; nothing was uploaded", h.Key, why)))
	}
	k := &keeper{l: l, parent: ctx}
	k.start()
	defer k.stop()
	// Under --if-absent, a key that exists is refused before the producer
	// starts or a byte of the body is read; the conditional commit still
	// settles a race with another writer.
	if err := refuseExisting(upCtx, l.Bucket(), h.Key, cond); err != nil {
		k.stop()
		return "", nil, releaseAfter(l, loc, b, prefix, p, putError(putClass(l, err), explainScheme(loc.Scheme, fmt.Errorf("put %s: %w", h.Key, err))))
	}
	checked, body, err := in.open(h.Key)
	if err != nil {
		k.stop()
		return "", nil, releaseAfter(l, loc, b, prefix, p, err)
	}
	defer in.close()
	stopForward := context.AfterFunc(upCtx, func() { in.forward(upCtx) })
	v, err := putFenced(upCtx, l, h.Key, body, cond, &driver.StreamOptions{PartSize: h.PartSize, Concurrency: h.Concurrency})
	stopForward()
	k.stop()
	var result error
	if err != nil {
		v = ""
		class := putClass(l, err)
		switch {
		case signalled(upCtx):
			code, why := interruptCode(upCtx)
			result = withCode(code, fmt.Errorf("put %s: %s: the upload was aborted, nothing was written: %w", h.Key, why, err))
		case inputCode(checked, nil) != nil:
			result = inputCode(checked, nil)
		case upCtx.Err() != nil && class == putClassError:
			code, why := interruptCode(upCtx)
			result = withCode(code, fmt.Errorf("put %s: %s: the upload was aborted: %w", h.Key, why, err))
		default:
			result = putError(class, explainScheme(loc.Scheme, fmt.Errorf("put %s: %w", h.Key, err)))
		}
	}
	return v, checked, releaseAfter(l, loc, b, prefix, p, result)
}

// errParentsLease: put URL inside hold names the lease its own hold holds.
var errParentsLease = errors.New("the lease is held by the hold that runs this command")

// firstTry makes put URL's first attempt at the lease. If the lease is
// held by the hold that runs this put (its key and holder are the ones
// hold put in the command's environment), waiting would wait for put's own
// parent forever: it refuses at once (exit 2) and says to run "put KEY"
// through hold. Otherwise, if put is to wait, it says once, on stderr, who
// holds the lease, and returns nil for acquire to wait.
func firstTry(ctx context.Context, e *env, c *lease.Contender, key string, wait bool) (*lease.Lease, error) {
	l, err := c.Acquire(ctx)
	var held *lease.HeldError
	if err == nil || !errors.As(err, &held) {
		return l, nil // taken; or a failure, which acquire retries and explains
	}
	parent := e.getenv("BUCKETLEASE_INSTANCE_ID")
	if parent != "" && held.Holder() == parent && held.Key == e.getenv("BUCKETLEASE_KEY") && !held.SameID {
		return nil, withCode(exitUsage, fmt.Errorf("put %s: %w (instance %s holds %s): put URL would wait for its own parent forever. Inside hold, run \"bucketlease put %s …\" without the URL: it writes under hold's lease",
			key, errParentsLease, parent, held.Key, key))
	}
	if wait {
		fmt.Fprintf(e.stderr, "put %s: waiting for the lease: %v\n", key, held)
	}
	return nil, nil
}

// refuseExisting refuses a write under --if-absent to a key that exists,
// with one read before the body is streamed. A read that is not allowed
// (write-only credentials) proceeds: the commit's condition decides.
func refuseExisting(ctx context.Context, b driver.Bucket, key string, cond driver.Condition) error {
	if cond != driver.IfAbsent() {
		return nil
	}
	rc, v, err := b.Get(ctx, key)
	switch {
	case err == nil:
		rc.Close()
		return fmt.Errorf("refused, the key %s exists (version %s): %w (--if-absent); nothing was written: put a date in the key, or pass --if-match %s or --overwrite",
			key, v, driver.ErrPrecondition, v)
	case errors.Is(err, driver.ErrNotExist), errors.Is(err, driver.ErrPermission):
		return nil
	}
	return fmt.Errorf("reading the key %s before writing it: %w; nothing was written", key, err)
}

// putFenced streams body into key through l.Bucket. A body that blocks (a
// pipe whose writer stalls) is cut off at the fence, so that the upload
// aborts then rather than when the writer goes on.
func putFenced(ctx context.Context, l *lease.Lease, key string, body io.Reader, cond driver.Condition, opts *driver.StreamOptions) (driver.Version, error) {
	fctx, cancel := l.Fence(ctx)
	defer cancel()
	pr, pw := io.Pipe()
	go func() {
		_, err := io.CopyBuffer(pw, body, make([]byte, 1<<20))
		pw.CloseWithError(err)
	}()
	stop := context.AfterFunc(fctx, func() {
		why := context.Cause(fctx)
		if !l.MayWrite() {
			if why = l.Err(); why == nil {
				why = lease.ErrFenced
			}
		}
		pr.CloseWithError(fmt.Errorf("the body was cut off: %w", why))
	})
	defer stop()
	defer pr.Close()
	return driver.PutStream(fctx, l.Bucket(), key, pr, cond, opts)
}

func jsonLine(h putHeader) (string, error) {
	b, err := json.Marshal(h)
	if err != nil {
		return "", err
	}
	return string(b) + "\n", nil
}

// sizeValue is a byte size flag: 5242880, 5MiB, 64M, 1GiB.
type sizeValue struct{ n *int64 }

func (v sizeValue) String() string {
	if v.n == nil || *v.n == 0 {
		return ""
	}
	return strconv.FormatInt(*v.n, 10)
}

func (v sizeValue) Set(s string) error {
	num, mult := strings.TrimSpace(s), int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}} {
		if rest, ok := strings.CutSuffix(num, u.suffix); ok {
			num, mult = rest, u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > (1<<40)/mult {
		return fmt.Errorf("%q is not a size: write bytes or a number with KiB, MiB or GiB, such as 16MiB", s)
	}
	*v.n = n * mult
	return nil
}

// progress reports the bytes read so far and the rate on a terminal.
type progress struct {
	n     atomic.Int64
	done  chan struct{}
	ended chan struct{}
	once  atomic.Bool
}

// startProgress starts reporting on w if it is a terminal; otherwise the
// progress reports nothing.
func startProgress(w io.Writer, key string) *progress {
	p := &progress{done: make(chan struct{}), ended: make(chan struct{})}
	f, ok := w.(*os.File)
	if !ok || !isTerminal(f) {
		close(p.ended)
		return p
	}
	began := time.Now()
	go func() {
		defer close(p.ended)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		shown := false
		for {
			select {
			case <-p.done:
				if shown {
					fmt.Fprintf(f, "\rput %s: %s in %v\033[K\n", key, byteCount(p.n.Load()), time.Since(began).Round(100*time.Millisecond))
				}
				return
			case <-t.C:
				n, secs := p.n.Load(), time.Since(began).Seconds()
				fmt.Fprintf(f, "\rput %s: %s, %s/s\033[K", key, byteCount(n), byteCount(int64(float64(n)/secs)))
				shown = true
			}
		}
	}()
	return p
}

// count returns r counting what is read from it.
func (p *progress) count(r io.Reader) io.Reader { return &countingReader{r: r, n: &p.n} }

// stop ends the report (its last line says the total) and waits for it.
func (p *progress) stop() {
	if p.once.CompareAndSwap(false, true) {
		close(p.done)
	}
	<-p.ended
}

type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// byteCount says n bytes for people: 512 B, 12.3 MiB.
func byteCount(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}
