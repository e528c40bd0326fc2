package drivertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
)

// exclusion-across-processes (obligation 3): a driver that serialises its
// conditional writes with a mutex of its own passes every race in one
// process, so here the test that called Run runs again in child processes
// (the test binary, -test.run selecting this subtest, childEnv naming its
// work), each opening Options.URL, racing on the same keys. A child reads a
// key the suite wrote (catching a URL naming another bucket), prints ready,
// waits for "go" on stdin, and writes its outcomes to a file of its own.

// xprocName is the check's name.
const xprocName = "exclusion-across-processes"

// childEnv, in a child's environment, is "INDEX:SPECFILE".
const childEnv = "BUCKETLEASE_DRIVERTEST_EXCLUSION_CHILD"

const (
	xprocProcs      = 4                          // child processes
	xprocKeys       = 64                         // keys raced under IfAbsent, and as many under IfMatch
	xprocStreamKeys = 2                          // keys raced with streamed IfAbsent writes
	xprocStreamSize = driver.MinPartSize + 1<<20 // two parts
	// xprocMaxOutput bounds what is kept of a child's output.
	xprocMaxOutput = 1 << 20
)

var xprocCheck = check{
	name:    xprocName,
	area:    areaPut,
	applies: conditional,
	inTest:  true,
	needs:   needsURL,
	expect: fmt.Sprintf("%d processes, each with a bucket of its own opened from Options.URL, race IfAbsent on %d new keys and IfMatch on %d keys at one shared version "+
		"(and, where the driver streams, streamed IfAbsent writes of two parts on %d keys): every key has exactly one winner, whose write the object holds",
		xprocProcs, xprocKeys, xprocKeys, xprocStreamKeys),
	run: exclusionAcrossProcesses,
}

var processChecks = []check{xprocCheck}

func needsURL(o Options) string {
	if o.URL == "" {
		return "Options.URL is not set"
	}
	u, err := url.Parse(o.URL)
	if err != nil {
		return "Options.URL does not parse"
	}
	if strings.EqualFold(u.Scheme, "mem") {
		return "a mem:// bucket lives inside one process, so no other process can open it"
	}
	return ""
}

// xprocSpec is a child's work, as the suite writes it for the child.
type xprocSpec struct {
	Test       string           // the subtest the child must run the race in (its t.Name())
	URL        string           // Options.URL
	Marker     string           // a key the suite wrote
	MarkerBody string           // what Marker holds
	Ready      string           // the line a child prints once it is ready
	Create     []string         // keys raced under IfAbsent
	Update     []string         // keys raced under IfMatch(Start[i])
	Start      []driver.Version // the version of each Update key when the race starts
	Stream     []string         // keys raced with streamed IfAbsent writes
	Deadline   time.Time        // when a child gives up
	Dir        string           // where a child writes its result
}

// xprocResult is a child's report: per phase one letter per key (w won, r
// ErrPrecondition, u ErrOutcomeUnknown, e other), and the e's errors.
type xprocResult struct {
	Err    string // why the child did not race, if it did not
	Create string
	Update string
	Stream string
	Odd    []string
}

func (sp *xprocSpec) resultPath(i int) string {
	return filepath.Join(sp.Dir, "result-"+strconv.Itoa(i)+".json")
}

// xprocBody is what process p writes to a key raced with small bodies.
func xprocBody(p int) []byte { return []byte("process " + strconv.Itoa(p)) }

// xprocSeed is the newBody seed process p streams to stream key k.
func xprocSeed(p, k int) uint64 { return uint64(1000*(k+1) + p) }

func exclusionAcrossProcesses(ctx context.Context, s *scope) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("cannot find the test binary to run again: %v", err)
	}
	dir, err := os.MkdirTemp("", "drivertest-processes-")
	if err != nil {
		return fmt.Errorf("setup: %v", err)
	}
	defer os.RemoveAll(dir)
	sp, specPath, err := prepareRace(ctx, s, dir)
	if err != nil {
		return err
	}
	results, err := runChildren(ctx, exe, sp, specPath)
	if err != nil {
		return err
	}
	return judgeRace(ctx, s, sp, results)
}

// prepareRace writes the raced keys and their spec in dir, returning its path.
func prepareRace(ctx context.Context, s *scope, dir string) (*xprocSpec, string, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(time.Minute)
	}
	// The children stop a fifth of the time before the check's end, so
	// that this process has time left to judge what they did.
	deadline = deadline.Add(-time.Until(deadline) / 5)
	sp := &xprocSpec{Test: s.test, URL: s.opts.URL, Ready: "drivertest: ready " + runID(), Deadline: deadline, Dir: dir,
		Marker: s.key("marker"), MarkerBody: "drivertest " + s.prefix}
	if _, err := seed(ctx, s.b, sp.Marker, []byte(sp.MarkerBody)); err != nil {
		return nil, "", err
	}
	for i := range xprocKeys {
		sp.Create = append(sp.Create, s.key(fmt.Sprintf("create-%03d", i)))
		k := s.key(fmt.Sprintf("update-%03d", i))
		v, err := seed(ctx, s.b, k, []byte("start"))
		if err != nil {
			return nil, "", err
		}
		sp.Update = append(sp.Update, k)
		sp.Start = append(sp.Start, v)
	}
	for i := range xprocStreamKeys {
		sp.Stream = append(sp.Stream, s.key(fmt.Sprintf("stream-%d", i)))
	}
	data, err := json.Marshal(sp)
	if err != nil {
		return nil, "", err
	}
	specPath := filepath.Join(dir, "spec.json")
	if err := os.WriteFile(specPath, data, 0o600); err != nil {
		return nil, "", fmt.Errorf("setup: %v", err)
	}
	return sp, specPath, nil
}

// judgeRace says what is wrong with the race the children reported in
// results, reading the keys back where an outcome needs settling.
func judgeRace(ctx context.Context, s *scope, sp *xprocSpec, results []xprocResult) error {
	var odd []string
	for p, r := range results {
		if r.Err != "" {
			return fmt.Errorf("process %d did not race: %s", p, r.Err)
		}
		odd = append(odd, r.Odd...)
	}
	small := func(k string) func(p int) (bool, error) {
		return func(p int) (bool, error) {
			data, _, err := read(ctx, s.b, k)
			if err != nil {
				return false, fmt.Errorf("Get %s after the race: %s", k, outcome(err))
			}
			return bytes.Equal(data, xprocBody(p)), nil
		}
	}
	// Two winners are a failure whatever else went wrong; no winner, or a
	// missing write, only where no write failed otherwise.
	var several, other []string
	for _, ph := range []struct {
		what string
		keys []string
		got  func(r xprocResult) string
		hold func(k int) func(p int) (bool, error)
	}{
		{"IfAbsent", sp.Create, func(r xprocResult) string { return r.Create }, func(k int) func(int) (bool, error) { return small(sp.Create[k]) }},
		{"IfMatch", sp.Update, func(r xprocResult) string { return r.Update }, func(k int) func(int) (bool, error) { return small(sp.Update[k]) }},
		{"streamed IfAbsent", sp.Stream, func(r xprocResult) string { return r.Stream }, func(k int) func(int) (bool, error) {
			return func(p int) (bool, error) {
				return holdsBody(ctx, s.b, sp.Stream[k], xprocSeed(p, k), xprocStreamSize, "") == nil, nil
			}
		}},
	} {
		outs := make([]string, len(results))
		for p, r := range results {
			outs[p] = ph.got(r)
			if len(outs[p]) != len(ph.keys) {
				return fmt.Errorf("process %d reported %d %s outcomes for %d keys", p, len(outs[p]), ph.what, len(ph.keys))
			}
		}
		sev, oth, err := judge(ph.what, ph.keys, outs, ph.hold)
		if err != nil {
			return err
		}
		several = append(several, sev...)
		other = append(other, oth...)
	}
	if len(odd) > 0 {
		other = []string{fmt.Sprintf("losers got errors other than ErrPrecondition: %v", firstOf(odd, 3))}
	}
	if problems := append(several, other...); len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// judge returns the keys of one phase with several winners, and those with
// none or not holding their winner's write; hold(k)(p) settles an unknown
// outcome.
func judge(what string, keys []string, outs []string, hold func(k int) func(p int) (bool, error)) (several, other []string, err error) {
	var many, none, wrong []string
	for k, key := range keys {
		key = key[strings.LastIndex(key, "/")+1:]
		holds := hold(k)
		var winners []int
		for p, o := range outs {
			switch o[k] {
			case 'w':
				winners = append(winners, p)
			case 'u':
				ok, err := holds(p)
				if err != nil {
					return nil, nil, err
				}
				if ok {
					winners = append(winners, p)
				}
			}
		}
		switch len(winners) {
		case 0:
			none = append(none, key)
		case 1:
			ok, err := holds(winners[0])
			if err != nil {
				return nil, nil, err
			}
			if !ok {
				wrong = append(wrong, fmt.Sprintf("%s (won by process %d)", key, winners[0]))
			}
		default:
			many = append(many, fmt.Sprintf("%s: processes %v", key, winners))
		}
	}
	if len(many) > 0 {
		several = append(several, fmt.Sprintf("%s writes in %d processes: %d of %d keys had more than one winner (%s); exactly one should",
			what, len(outs), len(many), len(keys), strings.Join(firstOf(many, 3), ", ")))
	}
	if len(none) > 0 {
		other = append(other, fmt.Sprintf("%s writes in %d processes: %d of %d keys had no winner (%s)",
			what, len(outs), len(none), len(keys), strings.Join(firstOf(none, 3), ", ")))
	}
	if len(wrong) > 0 {
		other = append(other, fmt.Sprintf("%s writes in %d processes: %d of %d keys do not hold their winner's write (%s)",
			what, len(outs), len(wrong), len(keys), strings.Join(firstOf(wrong, 3), ", ")))
	}
	return several, other, nil
}

// firstOf returns the first n of l, and a count of the rest.
func firstOf(l []string, n int) []string {
	if len(l) <= n {
		return l
	}
	return append(l[:n:n], fmt.Sprintf("and %d more", len(l)-n))
}

// child is one child process as the suite sees it.
type child struct {
	cmd   *exec.Cmd
	out   *childOutput
	stdin io.WriteCloser
	done  chan struct{} // closed once cmd.Wait returned
	err   error         // cmd.Wait's, once done is closed
}

// childOutput keeps a child's stdout and stderr and closes ready once the
// child's ready line has appeared.
type childOutput struct {
	mu    sync.Mutex
	buf   []byte
	token []byte
	ready chan struct{}
	seen  bool
}

func (o *childOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if room := xprocMaxOutput - len(o.buf); room > 0 {
		o.buf = append(o.buf, p[:min(len(p), room)]...)
	}
	if !o.seen && bytes.Contains(o.buf, o.token) {
		o.seen = true
		close(o.ready)
	}
	return len(p), nil
}

// tail returns the end of the child's output, for a message.
func (o *childOutput) tail() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	b := o.buf
	if len(b) > 2000 {
		b = append([]byte("…"), b[len(b)-2000:]...)
	}
	if len(b) == 0 {
		return "(no output)"
	}
	return strings.TrimSpace(string(b))
}

// runPattern is a -test.run pattern selecting exactly the (sub)test name.
func runPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

// runChildren starts the children, tells them all to go once each is
// ready, and returns their results; every child has exited when it returns.
func runChildren(ctx context.Context, exe string, sp *xprocSpec, specPath string) ([]xprocResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	var children []*child
	defer func() {
		cancel() // exec.CommandContext kills any child still running
		for _, c := range children {
			<-c.done
		}
	}()
	timeout := time.Until(sp.Deadline) + 30*time.Second
	for i := range xprocProcs {
		cmd := exec.CommandContext(ctx, exe, "-test.run="+runPattern(sp.Test), "-test.count=1", "-test.timeout="+timeout.String())
		cmd.Env = append(os.Environ(), childEnv+"="+strconv.Itoa(i)+":"+specPath)
		cmd.WaitDelay = 5 * time.Second
		out := &childOutput{token: []byte(sp.Ready), ready: make(chan struct{})}
		cmd.Stdout, cmd.Stderr = out, out
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return nil, fmt.Errorf("setup: %v", err)
		}
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("starting process %d (%s): %v", i, exe, err)
		}
		c := &child{cmd: cmd, out: out, stdin: stdin, done: make(chan struct{})}
		children = append(children, c)
		go func() {
			c.err = cmd.Wait()
			close(c.done)
		}()
	}
	for i, c := range children {
		select {
		case <-c.out.ready:
		case <-c.done:
			if r, err := readResult(sp, i); err == nil && r.Err != "" {
				return nil, fmt.Errorf("process %d did not race: %s", i, r.Err)
			}
			return nil, fmt.Errorf("process %d (%s) ended (%v) before it was ready to race; it must run the test that called Run up to its call: %s",
				i, runPattern(sp.Test), c.err, c.out.tail())
		case <-ctx.Done():
			return nil, fmt.Errorf("process %d was not ready to race in time: %v; its output: %s", i, ctx.Err(), c.out.tail())
		}
	}
	for _, c := range children {
		_, _ = io.WriteString(c.stdin, "go\n")
		c.stdin.Close()
	}
	results := make([]xprocResult, len(children))
	for i, c := range children {
		select {
		case <-c.done:
		case <-ctx.Done():
			return nil, fmt.Errorf("process %d did not finish its writes in time: %v; its output: %s", i, ctx.Err(), c.out.tail())
		}
		r, err := readResult(sp, i)
		if err != nil {
			return nil, fmt.Errorf("process %d (exit: %v) reported no result: %v; its output: %s", i, c.err, err, c.out.tail())
		}
		results[i] = r
	}
	return results, nil
}

func readResult(sp *xprocSpec, i int) (xprocResult, error) {
	var r xprocResult
	data, err := os.ReadFile(sp.resultPath(i))
	if err != nil {
		return r, err
	}
	return r, json.Unmarshal(data, &r)
}
