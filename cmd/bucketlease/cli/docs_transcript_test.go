//go:build linux

package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/term"
	"github.com/mushroomdb/bucketlease/internal/testsupport/miniotest"
)

// The hold, show and break sessions in docs/cli.md are produced by the
// tests below, which run the same command lines as separate processes and
// compare what they print with the docs. What differs from run to run (times,
// versions, pids, "5s ago", a port) is compared by shape only, and a run of
// identical lines (a renewal every 2s) counts as one; every other word, and
// every exit code, must match. Run with -update-docs to rewrite the blocks
// from a fresh run.

// docsFile is the document whose sessions the tests check.
const docsFile = "../../../docs/cli.md"

// docsMu serialises the tests' rewrites of docsFile under -update-docs.
var docsMu sync.Mutex

// session is the text of one documented terminal session, built as the
// test runs it.
type session struct {
	strings.Builder
	names []string // pairs for strings.NewReplacer: the test's name, the docs' name
	// anyOrder accepts the lines in another order: events that become
	// due at one instant (a process continued after SIGSTOP) are reported
	// in the order the goroutines get to them.
	anyOrder bool
}

// rename makes the session show docName wherever the run printed testName
// (a temporary directory in place of /var/tmp/bl-doc/db1).
func (s *session) rename(testName, docName string) { s.names = append(s.names, testName, docName) }

// cmd writes a prompt line for the command line args (and what follows it,
// such as a redirection), quoted as a shell would need.
func (s *session) cmd(args []string, redirect string) {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = term.ShellQuote(a)
	}
	s.WriteString("$ " + strings.Join(q, " ") + redirect + "\n")
}

// newSession starts a session that shows docURL (or address) wherever the
// run printed testURL.
func newSession(testURL, docURL string) *session {
	s := &session{}
	s.rename(testURL, docURL)
	return s
}

// bucketlease writes the prompt line for "bucketlease args...".
func (s *session) bucketlease(args ...string) { s.cmd(append([]string{"bucketlease"}, args...), "") }

// exit writes the "exit N" line the docs end a command's output with.
func (s *session) exit(code int) { s.WriteString("exit " + strconv.Itoa(code) + "\n") }

func (s *session) text() string { return strings.NewReplacer(s.names...).Replace(s.String()) }

// volatile is what changes from one run to the next, and the shape it is
// compared by.
var volatile = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`), "<time>"},
	{regexp.MustCompile(`\b[0-9a-f]{32}\b`), "<version>"},
	{regexp.MustCompile(`\bpid \d+`), "pid <n>"},
	{regexp.MustCompile(`"pid": \d+`), `"pid": <n>`},
	{regexp.MustCompile(`"(host|user)": "[^"]*"`), `"$1": <s>`},
	{regexp.MustCompile(`\bon \S+ as \S+ \(as the holder says\)`), "on <host> as <user> (as the holder says)"},
	{regexp.MustCompile(`\b((\d+h)?(\d+m)?\d+(\.\d+)?s ago|just now)\b`), "<d> ago"},
	{regexp.MustCompile(`\bin (\d+h)?(\d+m)?\d+(\.\d+)?s\b`), "in <d>"},
	{regexp.MustCompile(`"(\w+_(ago|in)_s)": -?[\d.]+`), `"$1": <n>`},
	{regexp.MustCompile(`"((stamp_)?offset(_uncertainty)?_s)": -?[\d.]+`), `"$1": <n>`},
	{regexp.MustCompile(`\b(to within|give or take|renewed_at is) -?(\d+h)?(\d+m)?\d+(\.\d+)?m?s\b`), "$1 <d>"},
	{regexp.MustCompile(`\bto \d+ process(es)?\b`), "to <n> processes"},
	{regexp.MustCompile(`\b\d+s(\s+\d{16})\b`), "<d>$1"}, // list --late's LATE BY, before the epoch after it
	{regexp.MustCompile(`\b(epoch\s+|"epoch": )?\d{16}\b`), "${1}<n>"},
	{regexp.MustCompile(`\b(epoch\s+|"epoch": )\d+`), "${1}<n>"},
	{regexp.MustCompile(`127\.0\.0\.1:\d+`), "127.0.0.1:<port>"},
	{regexp.MustCompile(`\b(RequestID|HostID): \w+`), "$1: <id>"},
}

// shape is s with its volatile parts replaced by their shapes and each run
// of identical lines by one line.
func shape(s string) string {
	for _, v := range volatile {
		s = v.re.ReplaceAllString(s, v.with)
	}
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if len(out) == 0 || out[len(out)-1] != l {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func sortedLines(s string) string {
	l := strings.Split(s, "\n")
	slices.Sort(l)
	return strings.Join(l, "\n")
}

// docsBlock returns the fenced block of docsFile whose first line is first,
// and the text before and after it.
func docsBlock(t *testing.T, first string) (before, block, after string) {
	t.Helper()
	b, err := os.ReadFile(docsFile)
	if err != nil {
		t.Fatal(err)
	}
	head := "```\n" + first + "\n"
	if strings.Count(string(b), head) != 1 {
		t.Fatalf("%s has %d blocks starting %q, want 1", docsFile, strings.Count(string(b), head), first)
	}
	before, rest, _ := strings.Cut(string(b), head)
	block, after, ok := strings.Cut(rest, "```\n")
	if !ok {
		t.Fatalf("the block starting %q in %s has no end", first, docsFile)
	}
	return before + head, first + "\n" + block, after
}

// checkSession fails t unless the session has the shape of the block in
// docsFile that starts with the same line; with -update-docs it rewrites
// the block instead.
func checkSession(t *testing.T, s *session) {
	t.Helper()
	got := s.text()
	first, _, _ := strings.Cut(got, "\n")
	docsMu.Lock()
	defer docsMu.Unlock()
	before, block, after := docsBlock(t, first)
	if shape(got) == shape(block) || s.anyOrder && sortedLines(shape(got)) == sortedLines(shape(block)) {
		return
	}
	if *updateDocs {
		rest := strings.TrimPrefix(got, first+"\n")
		if err := os.WriteFile(docsFile, []byte(before+rest+"```\n"+after), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote the session starting %q in %s", first, docsFile)
		return
	}
	t.Errorf("%s: the session starting %q differs from a run of it (%s); if the change is intended, run go test ./cmd/bucketlease/cli -run %s -update-docs\nthe run:\n%s\nthe docs:\n%s",
		docsFile, first, firstDifference(shape(got), shape(block)), t.Name(), got, block)
}

// firstDifference says where two shapes first differ, line by line.
func firstDifference(run, docs string) string {
	r, d := strings.Split(run, "\n"), strings.Split(docs, "\n")
	for i := range max(len(r), len(d)) {
		var rl, dl string
		if i < len(r) {
			rl = r[i]
		}
		if i < len(d) {
			dl = d[i]
		}
		if rl != dl {
			return fmt.Sprintf("line %d of the shapes: the run has %q, the docs %q", i+1, rl, dl)
		}
	}
	return "no line differs"
}

// TestDocsSessionShape is the control for the checks below: a changed
// word, exit code or line is caught, and only volatile parts are not.
func TestDocsSessionShape(t *testing.T) {
	_, block, _ := docsBlock(t, "$ bucketlease hold file:///var/tmp/bl-doc/db1 --instance-id host-b")
	same := strings.NewReplacer("0s ago", "4s ago", "in 6s", "in 2s").Replace(block)
	if same == block || shape(same) != shape(block) {
		t.Errorf("a change of durations alone is drift:\n%s", same)
	}
	for _, drift := range []string{
		strings.Replace(block, "\n3\n", "\n0\n", 1),
		strings.Replace(block, "host-a", "host-c", 1),
		strings.Replace(block, "--wait", "--watch", 1),
		strings.Replace(block, "$ echo $?\n", "", 1),
	} {
		if drift == block {
			t.Fatalf("the control's edit did not apply to\n%s", block)
		}
		if shape(drift) == shape(block) {
			t.Errorf("drift not caught:\n%s", drift)
		}
	}
}

// TestDocsHoldSessions runs the hold and show sessions on db1: a holder
// with -v, a second hold refused, show and show --json, and hold --wait
// taking the lease the holder released on SIGTERM.
func TestDocsHoldSessions(t *testing.T) {
	u, _ := fileURL(t)
	const docURL = "file:///var/tmp/bl-doc/db1"

	holdArgs := []string{"hold", u, "--ttl", "6s", "--instance-id", "host-a", "-v"}
	a := start(t, nil, holdArgs...)
	a.waitFor(`renewed\s+renewed lease`)

	refused := newSession(u, docURL)
	args := []string{"hold", u, "--instance-id", "host-b"}
	refused.bucketlease(args...)
	out, errOut, code := runCLI(t, nil, args...)
	refused.WriteString(out + errOut)
	refused.WriteString("$ echo $?\n" + strconv.Itoa(code) + "\n")
	checkSession(t, refused)

	show := newSession(u, docURL)
	for _, args := range [][]string{{"show", u}, {"show", u, "--json"}} {
		show.bucketlease(args...)
		out, errOut, code := runCLI(t, nil, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		show.WriteString(out)
	}
	checkSession(t, show)

	waitArgs := []string{"hold", u, "--ttl", "6s", "--instance-id", "host-b", "--wait"}
	b := start(t, nil, waitArgs...)
	b.waitFor(`waiting\s+lease LEASE is held by instance host-a`)
	a.signal(syscall.SIGTERM)
	if code := a.wait(); code != 0 {
		t.Errorf("host-a's hold exited %d after SIGTERM, want 0", code)
	}
	b.waitFor(`holding\s+holding lease LEASE`)
	b.signal(syscall.SIGTERM)
	if code := b.wait(); code != 0 {
		t.Errorf("host-b's hold exited %d after SIGTERM, want 0", code)
	}

	holder := newSession(u, docURL)
	holder.bucketlease(holdArgs...)
	holder.WriteString(a.errOutput())
	checkSession(t, holder)

	waiter := newSession(u, docURL)
	waiter.bucketlease(waitArgs...)
	waiter.WriteString(b.errOutput())
	checkSession(t, waiter)
}

// TestDocsHoldCommandSession runs the session of a command under hold, its
// stdout redirected to a file in the working directory.
func TestDocsHoldCommandSession(t *testing.T) {
	u, _ := fileURL(t)
	work := t.TempDir()
	args := []string{"hold", u, "--ttl", "6s", "--instance-id", "host-a", "--",
		"sh", "-c", "echo backup running as $BUCKETLEASE_INSTANCE_ID; sleep 2; echo backup done"}
	s := newSession(u, "file:///var/tmp/bl-doc/db2")
	s.cmd(append([]string{"bucketlease"}, args...), " > backup.log")

	log, err := os.Create(filepath.Join(work, "backup.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	errOut, code := runTo(t, work, log, nil, args...)
	s.WriteString(errOut)
	s.exit(code)
	s.cmd([]string{"cat", "backup.log"}, "")
	b, err := os.ReadFile(log.Name())
	if err != nil {
		t.Fatal(err)
	}
	s.Write(b)
	checkSession(t, s)
}

// TestDocsWatchdogSession runs the session in which hold is stopped with
// SIGSTOP while its command writes: the watchdog kills the command at the
// fence deadline, host-b takes the lease over, and hold, continued, leaves
// host-b's lease alone and exits 124.
func TestDocsWatchdogSession(t *testing.T) {
	u, dir := fileURL(t)
	work := t.TempDir()
	args := []string{"hold", u, "--ttl", "6s", "--instance-id", "host-a", "--",
		"sh", "-c", "while :; do date +%s%N >> ticks; sleep 0.5; done"}
	s := newSession(u, "file:///var/tmp/bl-doc/db9")
	s.anyOrder = true
	s.bucketlease(args...)

	a := startIn(t, work, nil, args...)
	a.waitFor(`command-started`)
	ticks := filepath.Join(work, "ticks")
	waitTicks(t, ticks, 2)
	a.signal(syscall.SIGSTOP)
	waitState(t, a.cmd.Process.Pid, "T")
	time.Sleep(100 * time.Millisecond) // a renewal written as the signal came is on disk now
	fence := fenceDeadline(leaseRecord(t, dir))

	b := start(t, nil, "hold", u, "--ttl", "6s", "--instance-id", "host-b", "--wait")
	b.waitFor(`took-over`)
	if !waitQuiet(ticks) {
		t.Fatal("the command still writes after host-b took the lease over")
	}
	if late := ticksAfter(readTicks(t, ticks), fence); len(late) > 0 {
		t.Errorf("%d ticks after the fence deadline %s", len(late), fence.Format(time.RFC3339Nano))
	}
	a.signal(syscall.SIGCONT)
	code := a.wait()
	s.WriteString(a.errOutput())
	s.exit(code)
	b.signal(syscall.SIGTERM)
	b.wait()
	checkSession(t, s)
}

// TestDocsBreakSession runs the session of break on a lease whose holder
// was killed: a wrong version and a fresh lease are refused, --force
// breaks it but keeps it blocked until the holder's fence has passed, and
// --allow-overlap frees it at once.
func TestDocsBreakSession(t *testing.T) {
	u, _ := fileURL(t)
	a := start(t, nil, "hold", u, "--ttl", "1h", "--instance-id", "host-a")
	// "holding", not "acquired": the acquired event comes from inside
	// Acquire, before it has waited for its probe's scratch key to be
	// deleted, and a kill between the two leaves that key for show to list.
	a.waitFor(`holding\s+holding lease`)
	a.signal(syscall.SIGKILL)
	a.wait()
	version := showJSONOf(t, u).Version

	s := newSession(u, "file:///var/tmp/bl-doc/db4")
	s.WriteString("# a holder killed without releasing leaves a stuck lease (ttl 1h here)\n")
	for _, args := range [][]string{
		{"show", u},
		{"break", u, "--version", "0123456789abcdef0123456789abcdef"},
		{"break", u, "--version", version},
		{"break", u, "--version", version, "--force"},
		nil,
		{"show", u},
		{"break", u, "--version", "", "--force", "--allow-overlap"},
	} {
		if args == nil {
			s.WriteString("# the holder is known to be dead (its machine is off): let the next one in now\n")
			continue
		}
		if args[0] == "break" && args[3] == "" {
			args[3] = showJSONOf(t, u).Version // the break record's
		}
		s.bucketlease(args...)
		out, errOut, code := runCLI(t, nil, args...)
		s.WriteString(out + errOut)
		if args[0] == "break" {
			s.exit(code)
		}
	}
	checkSession(t, s)
}

// TestDocsCredentialsSession runs the session showing the hint for wrong
// credentials (on the MinIO server, through the s3 driver) and for an
// unknown scheme.
func TestDocsCredentialsSession(t *testing.T) {
	srv := miniotest.Env(t)
	env := append(minioEnv(t, srv), "AWS_ACCESS_KEY_ID=nobody", "AWS_SECRET_ACCESS_KEY=wrong")
	s := newSession(srv.Addr, "127.0.0.1:41559") // the port is the test server's
	u := "s3://backups/db1?endpoint=" + srv.URL() + "&path_style=true"
	s.WriteString("$ AWS_ACCESS_KEY_ID=nobody AWS_SECRET_ACCESS_KEY=wrong bucketlease show " + term.ShellQuote(u) + "\n")
	out, errOut, code := runCLI(t, env, "show", u)
	noSecret(t, srv, out, errOut)
	s.WriteString(out + errOut)
	s.exit(code)
	s.bucketlease("show", "ftp://example.com/x")
	out, errOut, code = runCLI(t, nil, "show", "ftp://example.com/x")
	s.WriteString(out + errOut)
	s.exit(code)
	checkSession(t, s)
}
