//go:build linux

package cli

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/exitcode"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/supervise"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/term"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// TestMemRefusedAcrossProcesses: a mem:// bucket lives
// in one process, so hold, break and probe refuse it (exit 2) instead of
// reporting conditional exclusion between processes that cannot see each
// other; the command after -- never runs. The demo still uses memory.
func TestMemRefusedAcrossProcesses(t *testing.T) {
	for _, args := range [][]string{
		{"hold", "mem://b/p"},
		{"hold", "mem://b/p", "--wait", "--", "echo", "RAN"},
		{"break", "mem://b/p", "--version", "0123"},
		{"probe", "mem://b/p"},
	} {
		out, errOut, code := runCLI(t, nil, args...)
		if code != exitcode.Usage || !strings.Contains(errOut, "mem:// is a bucket inside this one process") {
			t.Errorf("%v: exit %d, stderr %q; want exit %d naming mem:// as in-process", args, code, errOut, exitcode.Usage)
		}
		if strings.Contains(out+errOut, "RAN") || strings.Contains(errOut, "acquired") {
			t.Errorf("%v: ran or acquired: %q %q", args, out, errOut)
		}
	}
	if out, _, code := runCLI(t, nil, "demo"); code != 0 || !strings.Contains(out, "TOOK OVER") {
		t.Errorf("demo: exit %d", code)
	}
}

// deletedLease is the scenario: hold's command
// deletes the lease object (as a sync tool with --delete would) while
// another hold waits with --wait. It returns when the deletion happened,
// the first hold's command's last tick, when the waiter's command started,
// and the first hold's exit code.
func deletedLease(t *testing.T, ttl string, env []string) (deleted, lastA, startB time.Time, codeA int) {
	t.Helper()
	u, dir := fileURL(t)
	work := t.TempDir()
	ticksA, goFile, deletedFile := filepath.Join(work, "ticksA"), filepath.Join(work, "go"), filepath.Join(work, "deleted")
	startFile := filepath.Join(work, "startB")
	// The deletion's tick is written just before the rm, not after it:
	// the watchdog may kill the script between the two (under load it
	// did, and the tick was never written), and a tick a little early only
	// widens the detection window the test reports.
	scriptA := fmt.Sprintf(`while :; do date +%%s%%N >> %s; if [ -e %s ] && [ ! -e %s ]; then date +%%s%%N > %s; rm -f %s/LEASE; fi; sleep 0.02; done`,
		ticksA, goFile, deletedFile, deletedFile, dir)
	a := start(t, env, "hold", u, "--ttl", ttl, "--instance-id", "alpha", "-v", "--", "sh", "-c", scriptA)
	a.waitFor(`command-started`)
	waitTicks(t, ticksA, 5)
	b := start(t, env, "hold", u, "--ttl", ttl, "--instance-id", "beta", "--wait", "--", "sh", "-c",
		fmt.Sprintf(`date +%%s%%N > %s; exec sleep 600`, startFile))
	b.waitFor(`waiting`)
	a.waitFor(`renewed`) // the deletion comes right after a renewal: the next one is a third of a TTL away
	if err := os.WriteFile(goFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	b.waitFor(`command-started`)
	startB = time.Unix(0, tickFile(t, startFile))
	codeA = a.wait()
	waitQuiet(ticksA)
	ticks := readTicks(t, ticksA)
	lastA = time.Unix(0, ticks[len(ticks)-1])
	deleted = time.Unix(0, tickFile(t, deletedFile))
	b.signal(syscall.SIGTERM)
	b.wait()
	return deleted, lastA, startB, codeA
}

// tickFile reads the one tick a script wrote to path.
func tickFile(t *testing.T, path string) int64 {
	t.Helper()
	for end := time.Now().Add(eventTimeout); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(path)
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
			return n
		}
	}
	t.Fatalf("no tick in %s", path)
	return 0
}

// TestDeletedLeaseStopsCommand: a command that deletes
// its own lease object is stopped at once (hold reads the object back
// every TTL/30, 100 ms to 1 s), hold exits 124, and a hold waiting with
// --wait, which saw the lease vanish without a release, takes it only
// after the first one's command was stopped: never two writers. The
// mutant hold-no-lease-watch (lab/mutate/mutants.txt) takes both the
// read-back and the waiter's hold-off away, as before the fix: the waiter
// then takes the deleted lease while the first command still writes.
//
// The TTL is 20 s so that the first hold's next renewal, which would also
// find the object gone, is 6.7 s after the deletion. The waiter's create
// takes a poll and a tick of the service's clock (the file system's
// resolution, measured at Open), so without the read-back it starts well
// before that renewal; with a short TTL the renewal could come first and
// the mutant survive.
func TestDeletedLeaseStopsCommand(t *testing.T) {
	deleted, lastA, startB, codeA := deletedLease(t, "20s", nil)
	if codeA != exitcode.LeaseEnded {
		t.Errorf("the first hold exited %d, want %d", codeA, exitcode.LeaseEnded)
	}
	if !lastA.Before(startB) {
		t.Errorf("two writers: the first command wrote until %s, the waiter's started at %s", lastA.Format(time.RFC3339Nano), startB.Format(time.RFC3339Nano))
	}
	t.Logf("detection window: the command was stopped %v after it deleted LEASE; the waiter started %v after the deletion",
		lastA.Sub(deleted).Round(time.Millisecond), startB.Sub(deleted).Round(time.Millisecond))
}

// sigtermTrapped is the scenario: hold's command traps
// SIGTERM and writes ticks; hold gets SIGTERM twice. It returns hold's exit
// code (-1 if it had not exited within bound) and the lease's state after.
func sigtermTrapped(t *testing.T, env []string, bound time.Duration) (code int, state string, ticks string) {
	t.Helper()
	u, _ := fileURL(t)
	ticks = filepath.Join(t.TempDir(), "ticks")
	a := start(t, env, "hold", u, "--ttl", "30s", "--grace", "2s", "--", "sh", "-c",
		fmt.Sprintf(`trap "echo got TERM" TERM; while :; do date +%%s%%N >> %s; sleep 0.05; done`, ticks))
	a.waitFor(`command-started`)
	waitTicks(t, ticks, 3)
	a.signal(syscall.SIGTERM)
	a.waitFor(`got TERM`)
	a.signal(syscall.SIGTERM)
	code = a.exitWithin(bound)
	return code, showJSONOf(t, u).State, ticks
}

// TestSigtermGraceThenKill: SIGTERM to hold is passed
// on to the command; a command that traps it is killed, with everything it
// started, after --grace; then the lease is released and hold exits with
// the command's status (137, killed by SIGKILL). The mutant
// hold-term-no-grace only passes SIGTERM on: the command runs on, and
// hold with it.
func TestSigtermGraceThenKill(t *testing.T) {
	// hold exits about --grace (2 s) after the second SIGTERM; 20 s leaves
	// a loaded machine room, and fails the mutant well inside the mutation
	// tool's timeout (with exitTimeout, 60 s, it timed out instead).
	code, state, ticks := sigtermTrapped(t, nil, 20*time.Second)
	if code != 128+int(syscall.SIGKILL) {
		t.Errorf("hold exit %d, want %d (the command killed by SIGKILL after --grace)", code, 128+int(syscall.SIGKILL))
	}
	if state != "released" {
		t.Errorf("after hold exited the lease is %s, want released", state)
	}
	if !waitQuiet(ticks) {
		t.Error("the command still writes after hold exited")
	}
}

// TestEmptyCommandRefused: "hold URL -- $CMD" with an
// empty $CMD is a usage error (exit 2) before the lease is taken, not a
// hold until interrupted.
func TestEmptyCommandRefused(t *testing.T) {
	u, _ := fileURL(t)
	for _, args := range [][]string{{"hold", u, "--"}, {"hold", u, "--ttl", "6s", "--"}, {"hold", u, "--", ""}} {
		_, errOut, code := runCLI(t, nil, args...)
		if code != exitcode.Usage || !strings.Contains(errOut, "the command after -- is empty") {
			t.Errorf("%q: exit %d, stderr %q; want exit %d, an empty command", args, code, errOut, exitcode.Usage)
		}
	}
	if s := showJSONOf(t, u); s.State != "free" {
		t.Errorf("the lease was touched: %+v", s)
	}
}

// blackHole listens on loopback, accepts every connection and never
// answers, until the test ends. It returns its address.
func blackHole(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// TestHangIsBounded: against a server that accepts
// connections and never answers, show and break give up after --timeout
// and hold after a third of its TTL per request, each exiting 1 with the
// URL and the request it waited for, instead of hanging.
func TestHangIsBounded(t *testing.T) {
	u := "s3://bkt/db1?endpoint=http://" + blackHole(t) + "&path_style=true&region=us-east-1"
	env := []string{"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_EC2_METADATA_DISABLED=true"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"show", u, "--timeout", "2s"}, "within 2s (--timeout) to a read (GET) of db1/LEASE"},
		{[]string{"break", u, "--version", "0123", "--timeout", "2s"}, "within 2s (--timeout) to a read (GET) of db1/LEASE"},
		{[]string{"hold", u, "--ttl", "3s", "--", "echo", "RAN"}, "within 1s (a third of the TTL)"},
		// probe's preflight: its first request, bounded by --timeout,
		// not a bare "context deadline exceeded".
		{[]string{"probe", u, "--timeout", "2s"}, "its first request, a read (GET) of the scratch key db1/bucketlease-probe/preflight: no reply from " + u + " within 2s (--timeout)"},
	} {
		began := time.Now()
		_, errOut, code := runCLI(t, env, c.args...)
		took := time.Since(began)
		if code != exitcode.Failure || !strings.Contains(errOut, "no reply from "+u) || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: exit %d after %v, stderr %q; want exit 1 naming the URL and %q", c.args[0], code, took, errOut, c.want)
		}
		if strings.Contains(errOut, "RAN") {
			t.Errorf("%s: the command ran", c.args[0])
		}
		t.Logf("%s gave up after %v", c.args[0], took.Round(time.Millisecond))
	}
	out, _, code := runCLI(t, env, "probe", u, "--timeout", "2s", "--json")
	var got errorJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != exitcode.Failure || got.Class != "timeout" || !strings.Contains(got.Message, "within 2s (--timeout)") {
		t.Errorf("probe --json: exit %d, %q (%v); want the timeout object", code, out, err)
	}
}

// TestWaitStoppedBySignalExits128PlusN: a hold --wait
// stopped by a signal before it took the lease exits 128+N, as a shell
// reports a command killed by it: 143 for SIGTERM (it was 130 for every
// signal), 130 for SIGINT.
func TestWaitStoppedBySignalExits128PlusN(t *testing.T) {
	u, _ := fileURL(t)
	a := start(t, nil, "hold", u, "--instance-id", "alpha")
	a.waitFor(`holding`)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		b := start(t, nil, "hold", u, "--instance-id", "beta", "--wait")
		b.waitFor(`waiting`)
		b.signal(sig)
		if code := b.wait(); code != 128+int(sig) {
			t.Errorf("hold --wait stopped by %v: exit %d, want %d", sig, code, 128+int(sig))
		}
		if !strings.Contains(b.errOutput(), "interrupted by "+supervise.SignalName(sig)) {
			t.Errorf("no word of %s: %s", supervise.SignalName(sig), b.errOutput())
		}
	}
	a.signal(syscall.SIGTERM)
	a.wait()
}

// TestBreakPastedVersionAndCommand: break accepts the
// version with or without the double quotes an ETag is spelt with (a shell
// strips them from a pasted --version "…"), and the command line a refusal
// suggests is quoted for the shell: run through sh, it works as printed.
func TestBreakPastedVersionAndCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db1&shard=2")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	u := "file://" + dir
	old := time.Now().Add(-time.Hour)
	v := writeRecord(t, dir, admin.Record{InstanceID: "dead-host", AcquiredAt: old, RenewedAt: old, TTLSeconds: 30})

	_, errOut, code := runCLI(t, nil, "break", u, "--version", "0123456789abcdef0123456789abcdef")
	i := strings.Index(errOut, "bucketlease show ")
	if code != exitcode.Refused || i < 0 {
		t.Fatalf("a wrong version: exit %d, %q", code, errOut)
	}
	suggested := strings.TrimSpace(errOut[i:])
	if !strings.Contains(suggested, "'") {
		t.Errorf("the suggested command line is not quoted for the shell: %s", suggested)
	}
	sh := exec.Command("sh", "-c", strings.Replace(suggested, "bucketlease", term.ShellQuote(binary), 1))
	if out, err := sh.CombinedOutput(); err != nil || !strings.Contains(string(out), "dead-host") {
		t.Errorf("the suggested %s, run by sh: %v\n%s", suggested, err, out)
	}

	out, errOut, code := runCLI(t, nil, "break", u, "--version", `"`+string(v)+`"`)
	if code != 0 || !strings.Contains(out, "Broke the lease") {
		t.Errorf("a quoted version of an unquoted one: exit %d, %s%s", code, out, errOut)
	}
	if s := showJSONOf(t, u); s.State != "released" {
		t.Errorf("after break: %+v", s)
	}
}

// TestSameVersionIgnoresETagQuotes: the comparison behind break's
// --version, both ways, and nothing looser.
func TestSameVersionIgnoresETagQuotes(t *testing.T) {
	for _, c := range []struct {
		object, typed string
		same          bool
	}{
		{`"3820eb"`, `3820eb`, true}, {`3820eb`, `"3820eb"`, true}, {`"3820eb"`, `"3820eb"`, true},
		{`"3820eb"`, `3820ec`, false}, {`"3820eb"`, `"3820eb`, false}, {`3820eb`, ``, false},
	} {
		if got := sameVersion(driver.Version(c.object), driver.Version(c.typed)); got != c.same {
			t.Errorf("sameVersion(%s, %s) = %v", c.object, c.typed, got)
		}
	}
}

// lastEvent returns the last JSON event in out.
func lastEvent(t *testing.T, out string) map[string]any {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		var m map[string]any
		if json.Unmarshal([]byte(lines[i]), &m) == nil {
			return m
		}
	}
	t.Fatalf("no JSON event in %q", out)
	return nil
}

// TestExitCodesChosenAndReported: -E sets the code for
// a held lease (as flock -E does) and --lost-exit the one for a lease that
// ended while held, so that neither collides with the command's own codes;
// the command's own status is never remapped; with --json every outcome,
// refusals included, ends with an "exit" event carrying the code.
func TestExitCodesChosenAndReported(t *testing.T) {
	u, dir := fileURL(t)
	a := start(t, nil, "hold", u, "--instance-id", "alpha")
	a.waitFor(`holding`)
	_, errOut, code := runCLI(t, nil, "hold", u, "-E", "75", "--lost-exit", "76", "--json", "--", "sh", "-c", "exit 3")
	if ev := lastEvent(t, errOut); code != 75 || ev["event"] != "exit" || ev["status"] != float64(75) || ev["error"] == nil {
		t.Errorf("held, with -E 75: exit %d, last event %v", code, ev)
	}
	a.signal(syscall.SIGTERM)
	a.wait()

	_, errOut, code = runCLI(t, nil, "hold", u, "-E", "3", "--lost-exit", "76", "--json", "--", "sh", "-c", "exit 3")
	if ev := lastEvent(t, errOut); code != 3 || ev["event"] != "exit" || ev["status"] != float64(3) || ev["error"] != nil {
		t.Errorf("the command's own 3: exit %d, last event %v", code, ev)
	}
	_, errOut, code = runCLI(t, nil, "hold", u, "--lost-exit", "76", "--json", "--", "sh", "-c", "rm "+dir+"/LEASE; sleep 30")
	if ev := lastEvent(t, errOut); code != 76 || ev["status"] != float64(76) {
		t.Errorf("a deleted lease with --lost-exit 76: exit %d, last event %v", code, ev)
	}
	_, errOut, code = runCLI(t, nil, "hold", u, "--json", "--", "no-such-command-here")
	if ev := lastEvent(t, errOut); code != 127 || ev["status"] != float64(127) {
		t.Errorf("a missing command: exit %d, last event %v", code, ev)
	}
}

// TestShowJudgesFileURLsAsHoldDoes: show gives hold's
// answer for a file:// URL with a host (the three-slashes hint) or an
// unknown parameter, instead of calling the lease free.
func TestShowJudgesFileURLsAsHoldDoes(t *testing.T) {
	_, dir := fileURL(t)
	for _, c := range []struct{ url, want string }{
		{"file://var/backups/db1", "three slashes"},
		{"file://" + dir + "?foo=bar", `unknown query parameter "foo"`},
	} {
		for _, cmd := range []string{"show", "hold"} {
			_, errOut, code := runCLI(t, nil, cmd, c.url)
			if code != exitcode.Failure || !strings.Contains(errOut, c.want) {
				t.Errorf("%s %s: exit %d, %q; want exit 1 and %q", cmd, c.url, code, errOut, c.want)
			}
		}
	}
}
