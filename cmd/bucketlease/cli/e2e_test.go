//go:build unix

package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/exitcode"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/report"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/term"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/file"
	"github.com/mushroomdb/bucketlease/internal/objects"
	"github.com/mushroomdb/bucketlease/lease"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// Generous bounds for a slow shared machine; no test waits for them unless
// something is wrong.
const (
	eventTimeout = 60 * time.Second
	exitTimeout  = 60 * time.Second
)

// proc is a bucketlease process started by a test, with its stdout
// collected line by line.
type proc struct {
	t      *testing.T
	cmd    *exec.Cmd
	mu     sync.Mutex
	lines  []string
	stderr bytes.Buffer
	more   chan struct{} // receives after each new line, and once at EOF
	exited chan struct{}
	err    error
}

// start runs the binary with args and the extra environment env. Its
// stdout and stderr (where hold's events go) are collected line by line,
// together, and stderr alone too.
func start(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	return startProg(t, env, binary, args...)
}

// startProg is start for another program (such as nohup) that runs the
// binary.
func startProg(t *testing.T, env []string, prog string, args ...string) *proc {
	t.Helper()
	return launch(t, exec.Command(prog, args...), env, args)
}

// startIn is start with dir as the working directory.
func startIn(t *testing.T, dir string, env []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	return launch(t, cmd, env, args)
}

// launch starts cmd with the extra environment env; args are its arguments
// as a failure report names them.
func launch(t *testing.T, cmd *exec.Cmd, env []string, args []string) *proc {
	t.Helper()
	p := &proc{t: t, cmd: cmd, more: make(chan struct{}, 1), exited: make(chan struct{})}
	p.cmd.Env = append(cleanEnv(), env...)
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errPipe, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.read(out, nil) }()
	go func() { defer wg.Done(); p.read(errPipe, &p.stderr) }()
	go func() {
		wg.Wait()
		p.err = p.cmd.Wait()
		close(p.exited)
		p.notify()
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGCONT)
		_ = p.cmd.Process.Kill()
		select { // a process it left behind may hold stdout open
		case <-p.exited:
		case <-time.After(exitTimeout):
			t.Errorf("bucketlease %s: stdout still open %v after it was killed", strings.Join(args, " "), exitTimeout)
		}
		if t.Failed() {
			t.Logf("bucketlease %s\noutput:\n%s", strings.Join(args, " "), p.output())
		}
	})
	return p
}

func (p *proc) read(r io.Reader, also *bytes.Buffer) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		p.mu.Lock()
		p.lines = append(p.lines, sc.Text())
		if also != nil {
			also.WriteString(sc.Text() + "\n")
		}
		p.mu.Unlock()
		p.notify()
	}
}

func (p *proc) notify() {
	select {
	case p.more <- struct{}{}:
	default:
	}
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n")
}

func (p *proc) errOutput() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// waitFor waits until a line of stdout or stderr matches re, and returns it.
func (p *proc) waitFor(re string) string {
	p.t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.After(eventTimeout)
	for {
		p.mu.Lock()
		for _, l := range p.lines {
			if rx.MatchString(l) {
				p.mu.Unlock()
				return l
			}
		}
		p.mu.Unlock()
		select {
		case <-p.more:
		case <-p.exited:
			select {
			case <-p.more: // one last look at lines read before the exit
				continue
			default:
			}
			p.t.Fatalf("bucketlease exited (%v) before printing a line matching %q", p.err, re)
		case <-deadline:
			p.t.Fatalf("no line matching %q within %v", re, eventTimeout)
		}
	}
}

// wait waits for the process to exit and returns its exit code.
func (p *proc) wait() int {
	p.t.Helper()
	select {
	case <-p.exited:
	case <-time.After(exitTimeout):
		p.t.Fatalf("bucketlease did not exit within %v", exitTimeout)
	}
	return p.cmd.ProcessState.ExitCode()
}

// exitWithin waits at most bound for the process to exit and returns its
// exit code, or -1 if it is still running.
func (p *proc) exitWithin(bound time.Duration) int {
	select {
	case <-p.exited:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(bound):
		return -1
	}
}

func (p *proc) signal(s os.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(s); err != nil {
		p.t.Fatal(err)
	}
}

// cleanEnv is the test's environment without the lease switch, so that a
// developer's setting does not change what is tested.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, lease.EnvConditional+"=") {
			env = append(env, kv)
		}
	}
	return env
}

// runCLI runs the binary to completion and returns its output and exit
// code.
func runCLI(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out bytes.Buffer
	stderr, code = runTo(t, "", &out, env, args...)
	return out.String(), stderr, code
}

// runTo runs the binary to completion in dir (the test's own if "") with
// its stdout going to w, and returns its stderr and exit code.
func runTo(t *testing.T, dir string, w io.Writer, env []string, args ...string) (stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*exitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env, cmd.Dir = append(cleanEnv(), env...), dir
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = w, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("running bucketlease %v: %v", args, err)
	}
	return errb.String(), cmd.ProcessState.ExitCode()
}

// fileURL returns a file:// URL for a fresh directory.
func fileURL(t *testing.T) (string, string) {
	dir := t.TempDir()
	return "file://" + dir, dir
}

// showJSONOf runs show --json.
func showJSONOf(t *testing.T, u string) report.ShowJSON {
	t.Helper()
	out, errOut, code := runCLI(t, nil, "show", u, "--json")
	if code != 0 {
		t.Fatalf("show --json: exit %d: %s", code, errOut)
	}
	var s report.ShowJSON
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("show --json printed %q: %v", out, err)
	}
	return s
}

// TestHoldSecondRefusedThenReleased: two holds on one prefix; the second
// is refused with exit 3, naming the holder; the first releases on SIGINT.
func TestHoldSecondRefusedThenReleased(t *testing.T) {
	u, _ := fileURL(t)
	a := start(t, nil, "hold", u, "--ttl", "3s", "--instance-id", "alpha")
	a.waitFor(`acquired\s+acquired lease LEASE as instance alpha`)

	_, errOut, code := runCLI(t, nil, "hold", u, "--ttl", "3s", "--instance-id", "beta")
	if code != exitcode.Held || !strings.Contains(errOut, "held by instance alpha") || !strings.Contains(errOut, "--wait") {
		t.Errorf("second hold: exit %d, stderr %q; want %d naming alpha", code, errOut, exitcode.Held)
	}
	if s := showJSONOf(t, u); s.State != "fresh" || s.Holder != "alpha" || s.TTLSeconds == nil || *s.TTLSeconds != 3 {
		t.Errorf("show: %+v", s)
	}

	a.signal(syscall.SIGINT)
	if code := a.wait(); code != 0 {
		t.Errorf("holder exit %d after SIGINT, want 0", code)
	}
	a.waitFor(`released\s+released lease LEASE`)
	if s := showJSONOf(t, u); s.State != "released" && s.State != "free" {
		t.Errorf("after release, show says %+v", s)
	}
}

// TestHoldWaitTakesOverFromKilledHolder: the holder dies without
// releasing; a waiting instance takes over once the TTL has passed.
func TestHoldWaitTakesOverFromKilledHolder(t *testing.T) {
	u, _ := fileURL(t)
	a := start(t, nil, "hold", u, "--ttl", "2s", "--instance-id", "alpha", "--json")
	a.waitFor(`"event":"acquired"`)
	b := start(t, nil, "hold", u, "--ttl", "2s", "--instance-id", "beta", "--wait")
	b.waitFor(`waiting\s+.*held by instance alpha.*can be taken over in`)

	killedAt := time.Now()
	a.signal(syscall.SIGKILL)
	a.wait()
	b.waitFor(`took-over\s+instance beta took over a stale lease of instance alpha`)
	if d := time.Since(killedAt); d > eventTimeout {
		t.Errorf("the takeover took %v", d)
	}
	if s := showJSONOf(t, u); s.Holder != "beta" || s.State != "fresh" {
		t.Errorf("show after takeover: %+v", s)
	}
	b.signal(syscall.SIGTERM)
	if code := b.wait(); code != 0 {
		t.Errorf("exit %d after SIGTERM, want 0", code)
	}
}

// TestHoldWaitTimeout: --wait-timeout gives up with exit 3.
func TestHoldWaitTimeout(t *testing.T) {
	u, _ := fileURL(t)
	a := start(t, nil, "hold", u, "--ttl", "30s", "--instance-id", "alpha")
	a.waitFor(`acquired`)
	_, errOut, code := runCLI(t, nil, "hold", u, "--wait", "--wait-timeout", "1s", "--instance-id", "beta")
	if code != exitcode.Held || !strings.Contains(errOut, "--wait-timeout passed") || !strings.Contains(errOut, "alpha") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

// overwriteLease replaces the lease object with a fresh record of another
// instance, as a takeover would.
func overwriteLease(t *testing.T, dir, by string) {
	t.Helper()
	b, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	rec := admin.Record{InstanceID: by, AcquiredAt: now, RenewedAt: now, TTLSeconds: 30}
	if _, err := b.Put(context.Background(), "LEASE", rec.Encode(), driver.PutOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestHoldCommandStoppedWhenLeaseLost: the lease is taken from under a
// running command; hold kills it at once (SIGKILL, no --grace: the
// successor may be writing already) and exits 124.
func TestHoldCommandStoppedWhenLeaseLost(t *testing.T) {
	u, dir := fileURL(t)
	script := `echo "child running as $BUCKETLEASE_INSTANCE_ID"; trap 'echo child got TERM; exit 7' TERM; sleep 120 & wait`
	a := start(t, nil, "hold", u, "--ttl", "3s", "--instance-id", "alpha", "--grace", "10m", "--", "sh", "-c", script)
	a.waitFor(`child running as alpha`)
	overwriteLease(t, dir, "intruder")
	a.waitFor(`lost\s+lost lease LEASE to instance intruder`)
	a.waitFor(`stopping\s+the lease was taken from this holder .*: another instance may hold it already, so the command and everything it started are killed now \(SIGKILL, no grace\)`)
	a.waitFor(`killed\s+.*SIGKILL to \d+ processes: the lease was lost`)
	a.waitFor(`command-exited\s+"sh" \(pid \d+\) was killed by signal SIGKILL$`)
	if code := a.wait(); code != exitcode.LeaseEnded {
		t.Errorf("exit %d, want %d", code, exitcode.LeaseEnded)
	}
	if strings.Contains(a.output(), "child got TERM") {
		t.Errorf("the command got SIGTERM and a grace, not SIGKILL at once:\n%s", a.output())
	}
	if s := showJSONOf(t, u); s.Holder != "intruder" {
		t.Errorf("hold touched the successor's lease: %+v", s)
	}
}

// TestHoldCommandExitStatus: hold exits with the command's status and
// releases the lease afterwards; a signal is passed on to the command, even
// one that reaches hold before it has read the watchdog's report that the
// command started (once dropped, which made this test flake; the mutant
// hold-drop-early-signal drops it again and holds the report back by a
// second, as a loaded machine may, so that the SIGINT below comes first).
func TestHoldCommandExitStatus(t *testing.T) {
	u, _ := fileURL(t)
	out, errOut, code := runCLI(t, nil, "hold", u, "--", "sh", "-c", "exit 42")
	if code != 42 {
		t.Errorf("exit %d, want the command's 42\n%s\n%s", code, out, errOut)
	}
	if st := showJSONOf(t, u).State; !strings.Contains(errOut, "released lease LEASE") || st != "released" && st != "free" {
		t.Errorf("the lease was not released (%s):\n%s", st, errOut)
	}
	_, errOut, code = runCLI(t, nil, "hold", u, "--", "no-such-command-here")
	if code != 127 || !strings.Contains(errOut, "not found") {
		t.Errorf("a missing command: exit %d, %s", code, errOut)
	}

	a := start(t, nil, "hold", u, "--", "sh", "-c", `trap 'echo child got INT; exit 3' INT; echo ready; sleep 120 & wait`)
	a.waitFor(`ready`)
	a.signal(syscall.SIGINT)
	a.waitFor(`child got INT`)
	if code := a.wait(); code != 3 {
		t.Errorf("exit %d after passing SIGINT on, want the command's 3", code)
	}
}

// TestHoldStopsWhatTheCommandLeftBehind: a process the command started and
// left running does not outlive the lease.
func TestHoldStopsWhatTheCommandLeftBehind(t *testing.T) {
	u, _ := fileURL(t)
	a := start(t, nil, "hold", u, "--", "sh", "-c", `sleep 120 & echo left a sleep behind`)
	a.waitFor(`left a sleep behind`)
	a.waitFor(`stopping\s+sent SIGTERM to 1 processes pid \d+ left running`)
	// The sleep held stdout open: wait returns only once it is gone.
	if code := a.wait(); code != 0 {
		t.Errorf("exit %d, want 0", code)
	}
}

// writeRecord writes rec as the lease object and returns its version.
func writeRecord(t *testing.T, dir string, rec admin.Record) driver.Version {
	t.Helper()
	b, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(context.Background(), "LEASE", rec.Encode(), driver.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	// Written when it says it was: the file driver reports the file's
	// modification time as the service's, by which the lease judges it.
	if err := os.Chtimes(filepath.Join(dir, "LEASE"), rec.RenewedAt, rec.RenewedAt); err != nil {
		t.Fatal(err)
	}
	_, a, err := objects.ReadAll(context.Background(), b, "LEASE", 1<<12, driver.GetOptions{}) // its version moves with its time
	if err != nil {
		t.Fatal(err)
	}
	return a.Version
}

// TestBreak: break refuses a changed version and a fresh lease, and
// removes the lease at the right version.
func TestBreak(t *testing.T) {
	u, dir := fileURL(t)
	old := time.Now().Add(-time.Hour)
	v := writeRecord(t, dir, admin.Record{InstanceID: "dead-host", AcquiredAt: old, RenewedAt: old, TTLSeconds: 30})

	out, errOut, code := runCLI(t, nil, "break", u, "--version", "0123456789abcdef0123456789abcdef")
	if code != exitcode.Refused || !strings.Contains(errOut, "changed since you looked") || !strings.Contains(out, "dead-host") {
		t.Errorf("wrong version: exit %d\n%s\n%s", code, out, errOut)
	}
	if s := showJSONOf(t, u); s.Version != string(v) || s.State != "stale" {
		t.Errorf("a refused break changed the lease: %+v", s)
	}
	out, errOut, code = runCLI(t, nil, "break", u, "--version", string(v))
	if code != 0 || !strings.Contains(out, "Broke the lease LEASE") || !strings.Contains(out, "If-Match") {
		t.Errorf("right version: exit %d\n%s\n%s", code, out, errOut)
	}
	if s := showJSONOf(t, u); s.State != "released" || s.Holder != admin.BreakerID {
		t.Errorf("after break: %+v", s)
	}
	if _, errOut, code := runCLI(t, nil, "break", u, "--version", string(v)); code != exitcode.Refused || !strings.Contains(errOut, "changed since you looked") {
		t.Errorf("breaking again at the old version: exit %d, %s", code, errOut)
	}

	now := time.Now()
	v = writeRecord(t, dir, admin.Record{InstanceID: "live-host", AcquiredAt: now, RenewedAt: now, TTLSeconds: 600})
	_, errOut, code = runCLI(t, nil, "break", u, "--version", string(v))
	if code != exitcode.Refused || !strings.Contains(errOut, "fresh") || !strings.Contains(errOut, "--force") {
		t.Errorf("fresh lease: exit %d, %s", code, errOut)
	}
	if _, errOut, code = runCLI(t, nil, "break", u, "--version", string(v), "--force"); code != 0 {
		t.Errorf("--force: exit %d, %s", code, errOut)
	}
	empty, _ := fileURL(t)
	if out, _, code := runCLI(t, nil, "break", empty, "--version", string(v)); code != 0 || !strings.Contains(out, "nothing to break") {
		t.Errorf("free prefix: exit %d, %s", code, out)
	}
}

// TestShow: the text and JSON views of free, fresh, stale and suspect
// leases.
func TestShow(t *testing.T) {
	u, dir := fileURL(t)
	out, _, code := runCLI(t, nil, "show", u)
	if code != 0 || !strings.Contains(out, "state    free") || !strings.Contains(out, "pending  none") {
		t.Errorf("free: exit %d\n%s", code, out)
	}
	now := time.Now().Round(time.Second)
	v := writeRecord(t, dir, admin.Record{InstanceID: "alpha", AcquiredAt: now.Add(-time.Minute), RenewedAt: now.Add(-5 * time.Second), TTLSeconds: 30})
	out, _, _ = runCLI(t, nil, "show", u)
	// The ages depend on how long the command took to start: a slow
	// machine may take seconds.
	for _, want := range []string{`state     fresh`, `holder    alpha`, `acquired  1m\d+s ago`, `renewed   (\d|[1-2]\d)s ago`,
		`ttl       30s`, `takeover  in \d+s \(.*\), if its holder stops renewing`, `version   ` + string(v)} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	s := showJSONOf(t, u)
	// Takeover in 25 s by the record's stamp; on the service's clock (the
	// file's modification time) up to the file driver's resolution more
	// (measured at Open; at most 2 s).
	if s.State != "fresh" || s.Holder != "alpha" || s.Version != string(v) || s.RenewedAgoS < 4 || s.TakeoverInS < 1 || s.TakeoverInS > 28 {
		t.Errorf("show --json: %+v", s)
	}

	writeRecord(t, dir, admin.Record{InstanceID: "alpha", AcquiredAt: now, RenewedAt: now.Add(-time.Hour), TTLSeconds: 30})
	if s := showJSONOf(t, u); s.State != "stale" || s.TakeoverInS != 0 {
		t.Errorf("stale: %+v", s)
	}
	if err := os.WriteFile(filepath.Join(dir, "LEASE"), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, _ = runCLI(t, nil, "show", u)
	if !strings.Contains(out, "suspect") || !strings.Contains(out, "not a lease record") {
		t.Errorf("garbage:\n%s", out)
	}
	if s := showJSONOf(t, u); s.State != "suspect" || s.Reason == "" || s.Holder != "" {
		t.Errorf("garbage --json: %+v", s)
	}
}

// TestProbeFile: the file driver gives the exclusion it declares.
func TestProbeFile(t *testing.T) {
	u, dir := fileURL(t)
	out, errOut, code := runCLI(t, nil, "probe", u+"/sub")
	probeOut := out
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"CHECK", "put-if-absent-existing", "PASS", "declared: exclusion conditional, conditional delete yes",
		"observed: exclusion conditional, conditional delete yes", "verdict:  OK"} {
		if !strings.Contains(out, want) {
			t.Errorf("probe lacks %q:\n%s", want, out)
		}
	}
	out, _, code = runCLI(t, nil, "probe", u, "--json")
	var rep report.ProbeReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 || !rep.OK || rep.Observed.Exclusion != "conditional" || len(rep.Results) < 10 {
		t.Errorf("probe --json: exit %d, %v, %+v", code, err, rep)
	}
	if left := objectsIn(t, dir); len(left) > 0 {
		t.Errorf("probe left scratch objects behind: %v", left)
	}
	// What stays is said, exactly: the file driver's lock files, which it
	// never removes, counted in the report and in --json.
	locks, n := file.LockFiles(filepath.Join(dir, "sub"))
	if want := fmt.Sprintf("left behind: %d empty lock files in %s", n, locks); n == 0 || !strings.Contains(term.OneLine(probeOut), want) {
		t.Errorf("probe's report does not say %q:\n%s", want, probeOut)
	}
	if !strings.Contains(errOut, "their lock files stay, see the end") {
		t.Errorf("probe's first line says the scratch keys go and not what stays: %q", errOut)
	}
	if locks, m := file.LockFiles(dir); rep.LockFilesLeft != m || m == 0 || rep.LockDir != locks {
		t.Errorf("probe --json says %d lock files left in %s; there are %d", rep.LockFilesLeft, rep.LockDir, m)
	}
}

// objectsIn lists the regular files under dir outside the file driver's
// own metadata folder.
func objectsIn(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".bucketlease" {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestDemoBinary: the README's first command works as a process.
func TestDemoBinary(t *testing.T) {
	out, errOut, code := runCLI(t, nil, "demo")
	if code != 0 || !strings.Contains(out, "TOOK OVER") || !strings.Contains(out, "FENCED") {
		t.Errorf("exit %d\n%s\n%s", code, out, errOut)
	}
}

// sigInterrupt is Ctrl-C.
const sigInterrupt = syscall.SIGINT

// TestFlagRangesAsProcesses: flag values outside their documented range are
// usage errors (exit 2) from the real binary, and nothing is acquired: the
// directory stays without a LEASE.
func TestFlagRangesAsProcesses(t *testing.T) {
	u, dir := fileURL(t)
	for _, args := range [][]string{
		{"hold", u, "--ttl", "0", "--", "true"},
		{"hold", u, "--ttl", "2h", "--", "true"},
		{"hold", u, "--wait-timeout", "5s", "--", "true"},
		{"hold", u, "--grace", "-1s", "--", "true"},
	} {
		_, errOut, code := runCLI(t, nil, args...)
		if code != exitcode.Usage || !strings.Contains(errOut, args[2]) {
			t.Errorf("%q: exit %d, stderr %q; want exit %d naming %s", args, code, errOut, exitcode.Usage, args[2])
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "LEASE")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused command line touched the lease: %v", err)
	}
	// The control: an accepted --ttl runs.
	if _, errOut, code := runCLI(t, nil, "hold", u, "--ttl", "3s", "--", "true"); code != 0 {
		t.Fatalf("--ttl 3s: exit %d: %s", code, errOut)
	}
}

// TestShowPendingOnFreeFileDirectory: show finds a free file:// directory
// free without opening the driver (which would create its metadata
// folder); the file driver lists its staged files (multipart.PendingLister),
// so show says there are none where it never staged a write, and creates
// nothing.
func TestShowPendingOnFreeFileDirectory(t *testing.T) {
	u, dir := fileURL(t)
	out, _, code := runCLI(t, nil, "show", u)
	if code != 0 || !strings.Contains(out, "pending  none") {
		t.Errorf("free directory: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, ".bucketlease")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("show created the driver's folder: %v", err)
	}
}

// TestShowLeftoverScratchKeys: a scratch key beside the lease object
// (LEASE.acquire-probe-…, left by a process that died during its acquire's
// probe) is named by show, in text and --json, whether the prefix is free
// (read without opening the driver) or holds a lease (listed through it);
// a key that only looks like one is not, and none is named when there is
// none.
func TestShowLeftoverScratchKeys(t *testing.T) {
	u, dir := fileURL(t)
	out, _, _ := runCLI(t, nil, "show", u)
	if strings.Contains(out, "scratch") {
		t.Errorf("no scratch key, but:\n%s", out)
	}
	const left = "LEASE.acquire-probe-0123456789abcdef"
	for _, name := range []string{left, "LEASE.acquire-probe-xyz", "LEASE.bak"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	check := func(when string) {
		t.Helper()
		out, errOut, code := runCLI(t, nil, "show", u)
		if code != 0 || !regexp.MustCompile(`(?m)^scratch\s+1 key left by a probe that did not finish`).MatchString(out) ||
			!strings.Contains(out, left+", written ") || strings.Contains(out, "xyz") || strings.Contains(out, "LEASE.bak") {
			t.Errorf("%s: exit %d\n%s%s", when, code, out, errOut)
		}
		if s := showJSONOf(t, u); len(s.ScratchKeys) != 1 || s.ScratchKeys[0].Key != left || s.ScratchKeys[0].Modified == "" {
			t.Errorf("%s: --json scratch_keys %+v", when, s.ScratchKeys)
		}
	}
	check("a free prefix")
	if _, errOut, code := runCLI(t, nil, "hold", u, "--ttl", "6s", "--state-dir", "none", "--", "true"); code != 0 {
		t.Fatalf("hold: exit %d: %s", code, errOut)
	}
	check("a released lease")
}
