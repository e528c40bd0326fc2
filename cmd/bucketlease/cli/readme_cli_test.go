//go:build unix

package cli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeTryDir is the directory the README's command-line lines use; the
// test runs them on a temporary directory in its place.
const readmeTryDir = "/tmp/bucketlease-try"

// readmeCLIBlock returns the README's block of command-line lines: the
// ```sh block of "## The command line".
func readmeCLIBlock(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	if m := regexp.MustCompile(`(?m)\|\s*bucketlease put\b`).FindString(readme); m != "" {
		t.Errorf("the README pipes into put (%q): give put its producer after --, which commits only if it exits 0", m)
	}
	_, section, ok := strings.Cut(readme, "\n## The command line\n")
	_, block, ok2 := strings.Cut(section, "```sh\n")
	block, _, ok3 := strings.Cut(block, "```\n")
	if !ok || !ok2 || !ok3 {
		t.Fatal(`the README has no ` + "```sh" + ` block under "## The command line"`)
	}
	return block
}

// TestReadmeCLILines runs the README's command-line lines (hold, put, show,
// list, probe) exactly as written, as one sh script that stops at the first
// failure, on file:// in a temporary directory (in place of
// /tmp/bucketlease-try), with the bucketlease under test first on PATH. Each
// must exit 0 and do what its comment says. The control: the same lines
// with a producer that fails stop at put (exit 7) and store nothing.
func TestReadmeCLILines(t *testing.T) {
	if _, err := exec.LookPath("tar"); err != nil {
		t.Skip("the README's put line runs tar, which is not on PATH")
	}
	block := readmeCLIBlock(t)
	var commands []string
	for _, line := range strings.Split(block, "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "bucketlease" {
			commands = append(commands, f[1])
		}
	}
	if got := strings.Join(commands, " "); got != "hold put show list probe" {
		t.Fatalf("the README's command-line block runs bucketlease %q, want hold, put, show, list and probe in that order; keep this test in step", got)
	}
	if !strings.Contains(block, readmeTryDir) {
		t.Fatalf("the README's command-line block does not use %s", readmeTryDir)
	}

	dir, stdout, stderr, code := runReadmeLines(t, block)
	if code != 0 {
		t.Fatalf("the README's command-line lines exited %d\nstdout:\n%s\nstderr (sh -x):\n%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"one machine at a time runs this",  // hold ran the command
		"state     released",               // show, after hold and put released
		"file://" + dir + "/db1  released", // list found the lease under the prefix
		"verdict:  OK, the service gives the exclusion its driver declares",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the README's command-line lines printed no %q\nstdout:\n%s\nstderr:\n%s", want, stdout, stderr)
		}
	}
	if !strings.Contains(stderr, "put etc/hosts.tar.gz: stored ") {
		t.Errorf("put did not say it stored etc/hosts.tar.gz\nstderr:\n%s", stderr)
	}
	got, err := exec.Command("tar", "-xzOf", filepath.Join(dir, "db1", "etc", "hosts.tar.gz"), "hosts").Output()
	if err != nil {
		t.Fatalf("the object put stored is not the tar of /etc/hosts: %v", err)
	}
	if want, _ := os.ReadFile("/etc/hosts"); !bytes.Equal(got, want) {
		t.Errorf("the object put stored holds %q, want /etc/hosts", got)
	}

	// The control: a producer that fails stops the lines at put, which
	// exits 7 and stores nothing.
	failing := strings.Replace(block, "-C /etc hosts", "-C /etc no-such-file-here", 1)
	if failing == block {
		t.Fatal("control: the README's put line has no `-C /etc hosts` to replace")
	}
	dir, stdout, stderr, code = runReadmeLines(t, failing)
	if code != 7 {
		t.Errorf("control: with a failing producer the lines exited %d, want put's 7\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "db1", "etc", "hosts.tar.gz")); !os.IsNotExist(err) {
		t.Errorf("control: put of a failing producer left an object (stat: %v)", err)
	}
	if strings.Contains(stdout, "verdict:") {
		t.Errorf("control: the lines went on after put failed\nstdout:\n%s", stdout)
	}
}

// runReadmeLines runs lines as an sh script (-e: stop at the first failure;
// -x: say which line ran) in a fresh working directory, with readmeTryDir
// replaced by a fresh directory, and returns that directory, the output and
// the exit code.
func runReadmeLines(t *testing.T, lines string) (dir, stdout, stderr string, code int) {
	t.Helper()
	dir = t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*exitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-ex", "-c", strings.ReplaceAll(lines, readmeTryDir, dir))
	cmd.Dir = t.TempDir()
	cmd.Env = append(cleanEnv(), "PATH="+filepath.Dir(binary)+string(os.PathListSeparator)+os.Getenv("PATH"))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("running the README's lines: %v", err)
	}
	return dir, out.String(), errb.String(), cmd.ProcessState.ExitCode()
}
