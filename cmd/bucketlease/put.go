package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/lease"
)

// exitPutRefused: put: the write's condition did not hold (the key exists,
// or has another version than --if-match names); nothing was written.
const exitPutRefused = exitRefused

// putExitCodesHelp documents put's exit codes.
const putExitCodesHelp = `Exit codes:
  0    stored: the version it created is printed on stdout
  1    an error: the URL, the credentials, the service, the network, reading FILE, or no hold to talk to
  2    a usage error
  3    put URL: another instance holds the lease (without --wait, or --wait-timeout passed)
  4    refused: the key exists (--if-absent, the default) or has another version than --if-match names; nothing was written
  6    put URL: another live process holds the lease under the same --instance-id
  124  the lease was fenced, lost or released before the object was committed: the upload was aborted, nothing was written
  125  put URL: the object was stored (its version printed) but the lease could not be released
`

var putCommand = &command{
	name:    "put",
	args:    "[URL] KEY [FILE|-] [FLAGS]",
	summary: "stream FILE or stdin into an object under the lease (inside hold, or taking it)",
	help: `Streams FILE (or stdin, for - or no FILE) into the object KEY under the lease's
prefix ({prefix}/KEY), in parts, and prints the version it created on stdout.
The write is fenced: no part and no commit starts once the lease may no longer
write, a part in flight is cancelled at the fence, and a cut-off upload is
aborted, so nothing of it is left and no object appears.

Inside "bucketlease hold URL -- COMMAND", the command (or anything it starts)
runs "bucketlease put KEY [FILE|-]": put talks to its hold over the Unix socket
hold names in $BUCKETLEASE_PUT_SOCKET (in a private directory that hold removes
at exit) and the upload runs under hold's own lease. Release waits for it. If
the lease ends mid-upload, hold aborts the upload and its watchdog stops the
command as usual.

With a URL first ("://" in the first argument), put takes the lease itself
(as hold does, with --wait, --ttl and --instance-id), streams, releases and
exits: "bucketlease put URL KEY [FILE|-]". Inside hold this takes a lease of
its own, so give it another prefix than hold's.

The object is written only if it is absent (--if-absent, the default: a
restore point is never overwritten), or if its version is --if-match's, or
unconditionally with --overwrite. Progress (bytes so far and the rate) goes
to stderr a few times a second when stderr is a terminal, and nowhere
otherwise; -v reports put URL's lease events too.

` + putExitCodesHelp + `
Examples:
  bucketlease hold file:///var/backups/db1 -- sh -c 'pg_dump db1 | bucketlease put dumps/db1.sql'
  bucketlease put 's3://my-bucket/backups/db1?region=eu-west-1' dumps/db1.sql db1.sql --wait
  pg_dump db1 | bucketlease put file:///var/backups/db1 dumps/db1.sql - --part-size 64MiB --concurrency 8
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
	hold        holdFlags // put URL's lease: ttl, instance id, wait
}

func setupPut(fs *flag.FlagSet) runFunc {
	f := &putFlags{}
	fs.BoolVar(&f.ifAbsent, "if-absent", false, "write only if KEY does not exist (If-None-Match: *); the default")
	fs.StringVar(&f.ifMatch, "if-match", "", "write only if KEY's current version is this one (as a previous put printed it)")
	fs.BoolVar(&f.overwrite, "overwrite", false, "write whatever is there")
	fs.Var(sizeValue{&f.partSize}, "part-size", "the size of each part, in bytes or with KiB, MiB, GiB (at least 5MiB; default 16MiB); memory is part size × concurrency")
	fs.IntVar(&f.concurrency, "concurrency", 0, "how many parts are uploaded at once (default 4)")
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
		if len(after) > 0 {
			return usageErrorf("put takes no command after --; only hold runs one")
		}
		set := map[string]bool{}
		fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
		cond, err := f.header(set)
		if err != nil {
			return err
		}
		oneShot := len(pos) > 0 && strings.Contains(pos[0], "://")
		rawURL := ""
		if oneShot {
			rawURL, pos = pos[0], pos[1:]
		}
		if len(pos) < 1 || len(pos) > 2 {
			return usageErrorf("put takes KEY [FILE|-] inside hold, or URL KEY [FILE|-]; got %d arguments", len(pos)+btoi(oneShot))
		}
		cond.Key = pos[0]
		file := "-"
		if len(pos) == 2 {
			file = pos[1]
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
		body, closeBody, err := openBody(file)
		if err != nil {
			return err
		}
		defer closeBody()
		prog := startProgress(e.stderr, cond.Key)
		defer prog.stop()
		var v driver.Version
		if oneShot {
			v, err = putOneShot(ctx, e, f, rawURL, cond, prog.count(body))
		} else {
			v, err = putViaHold(sock, cond, prog.count(body))
		}
		prog.stop()
		if v != "" {
			fmt.Fprintln(e.stdout, v)
		}
		return err
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
	case f.concurrency < 0 || f.concurrency > 256:
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

// openBody opens FILE, or stdin for "-".
func openBody(file string) (io.Reader, func(), error) {
	if file == "-" {
		return os.Stdin, func() {}, nil
	}
	fh, err := os.Open(file)
	if err != nil {
		return nil, nil, err
	}
	return fh, func() { fh.Close() }, nil
}

// putViaHold streams the body to the hold whose socket is sock and returns
// what it answered.
func putViaHold(sock string, h putHeader, body io.Reader) (driver.Version, error) {
	conn, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		return "", fmt.Errorf("put: cannot reach the hold that started this command (%s=%s): %w", putSocketEnv, sock, err)
	}
	defer conn.Close()
	hdr, err := jsonLine(h)
	if err != nil {
		return "", err
	}
	if _, err := io.WriteString(conn, putMagic+" "+hdr); err != nil {
		return "", fmt.Errorf("put: writing to hold: %w", err)
	}
	replies := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(conn).ReadString('\n')
		replies <- line
	}()
	var bodyErr atomic.Value
	go func() {
		buf := make([]byte, 1<<20)
		for {
			n, err := body.Read(buf)
			if n > 0 {
				if werr := writeChunk(conn, buf[:n]); werr != nil {
					return // hold stopped reading: its answer says why
				}
			}
			if err == io.EOF {
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
	line := <-replies
	if err, ok := bodyErr.Load().(error); ok {
		return "", fmt.Errorf("put %s: reading the body: %w; the upload was aborted", h.Key, err)
	}
	return parseReply(h.Key, line)
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
func putOneShot(ctx context.Context, e *env, f *putFlags, rawURL string, h putHeader, body io.Reader) (driver.Version, error) {
	cond, err := h.condition()
	if err != nil {
		return "", usageErrorf("%v", err)
	}
	if err := fileLeaseNotObject(rawURL); err != nil {
		return "", err
	}
	b, prefix, err := openURL(ctx, rawURL)
	if err != nil {
		return "", err
	}
	b = withDeadlines(b, requestTimeout(f.hold.ttl), rawURL, "a third of the TTL")
	w := io.Discard
	if f.verbose {
		w = e.stderr
	}
	p := &printer{w: w, verbose: f.verbose}
	p.start()
	defer p.close(2 * time.Second)
	logger, err := newLogger(e.stderr, "off", false)
	if err != nil {
		return "", err
	}
	c, err := lease.NewContender(b, prefix, &lease.Options{TTL: f.hold.ttl, InstanceID: f.hold.instanceID,
		Logger: logger, OnEvent: p.event, Getenv: e.getenv})
	if err != nil {
		return "", usageErrorf("%v", err)
	}
	waitCtx, stopWaiting := signalContext(ctx, holdSignals()...)
	l, err := acquire(waitCtx, c, b, prefix, &f.hold, p)
	if err != nil {
		stopWaiting()
		return "", explain(rawURL, err)
	}
	if oldLateHandover() {
		stopWaiting() // the old order: no handler until the upload's own
	}
	pauseBeforeHandover(p)
	// A signal now cuts the upload off (it is aborted) and releases:
	// registered before the wait lets go of the signals, so none is
	// missed, and one that came as the lease was taken stops the put
	// before it uploads anything.
	upCtx, stopUp := signalContext(ctx, holdSignals()...)
	defer stopUp()
	stopWaiting()
	if !oldLateHandover() && signalled(waitCtx) && ctx.Err() == nil {
		code, why := interruptCode(waitCtx)
		return "", releaseAfter(l, rawURL, b, prefix, p, withCode(code, fmt.Errorf("put %s: %s as the lease was taken; nothing was uploaded", h.Key, why)))
	}
	k := &keeper{l: l, parent: ctx}
	k.start()
	v, err := putFenced(upCtx, l, h.Key, body, cond, &driver.StreamOptions{PartSize: h.PartSize, Concurrency: h.Concurrency})
	k.stop()
	var result error
	if err != nil {
		v = ""
		class := putClass(l, err)
		if upCtx.Err() != nil && class == putClassError {
			code, why := interruptCode(upCtx)
			result = withCode(code, fmt.Errorf("put %s: %s: the upload was aborted: %w", h.Key, why, err))
		} else {
			result = putError(class, explain(rawURL, fmt.Errorf("put %s: %w", h.Key, err)))
		}
	}
	return v, releaseAfter(l, rawURL, b, prefix, p, result)
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

// PutStream implements driver.Streamer, so that hold's and put's bounded
// bucket streams through the driver: no bound on the whole upload, which
// takes as long as the body does (the fence bounds each part instead).
func (t *deadlineBucket) PutStream(ctx context.Context, key string, r io.Reader, cond driver.Condition, opts *driver.StreamOptions) (driver.Version, error) {
	return driver.PutStream(ctx, t.b, key, r, cond, opts)
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
