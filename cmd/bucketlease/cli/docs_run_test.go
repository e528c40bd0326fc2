//go:build unix

package cli

import (
	"flag"
	"os"
	"strconv"
	"strings"
	"testing"
)

// The checks of docs/cli.md that run the binary (runCLI, e2e_test.go).

var updateDocs = flag.Bool("update-docs", false, "rewrite docs/cli.md's checked transcripts from fresh runs")

// docsProbeDir is the directory the file:// probe transcript in docs/cli.md
// names; the test probes a fresh one and writes this name in its place.
const docsProbeDir = "/var/tmp/bl-doc/db3"

// TestDocsProbeTranscript: the file:// probe transcript in docs/cli.md is
// exactly what the command prints today (stderr's first line, then stdout,
// then the exit code), so it cannot drift from the checks drivertest runs.
// Run with -update-docs to rewrite it.
func TestDocsProbeTranscript(t *testing.T) {
	const docs = "../../../docs/cli.md"
	head := "```\n$ bucketlease probe file://" + docsProbeDir + "\n"
	before, block, after := cliTranscript(t, docs, head)
	dir := t.TempDir()
	stdout, stderr, code := runCLI(t, nil, "probe", "file://"+dir)
	first, _, _ := strings.Cut(stderr, "\n")
	got := strings.ReplaceAll(first+"\n"+stdout+"exit "+strconv.Itoa(code)+"\n", dir, docsProbeDir)
	if got == block {
		return
	}
	if *updateDocs {
		if err := os.WriteFile(docs, []byte(before+head+got+"```\n"+after), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote the probe transcript in %s", docs)
		return
	}
	t.Errorf("docs/cli.md's probe transcript differs from what probe prints now; run go test ./cmd/bucketlease/cli -run TestDocsProbeTranscript -update-docs\nnow:\n%s\nin the docs:\n%s", got, block)
}

// TestDocsDemoTranscript: the demo transcript in docs/cli.md is exactly what
// the demo prints (with alpha and beta swapped if the race went the other
// way). Run with -update-docs to rewrite it.
func TestDocsDemoTranscript(t *testing.T) {
	const docs = "../../../docs/cli.md"
	head := "```\n$ go run ./cmd/bucketlease demo\n"
	before, block, after := cliTranscript(t, docs, head)
	stdout, stderr, code := runCLI(t, nil, "demo")
	if code != 0 {
		t.Fatalf("demo exited %d: %s", code, stderr)
	}
	// Who wins the start is a real race: the story after the table's
	// heading may have the names swapped.
	intro, story, _ := strings.Cut(stdout, "WHY\n")
	swapped := intro + "WHY\n" + strings.NewReplacer("alpha", "beta", "beta", "alpha").Replace(story)
	if stdout == block || squeeze(swapped) == squeeze(block) {
		return
	}
	if *updateDocs {
		if err := os.WriteFile(docs, []byte(before+head+stdout+"```\n"+after), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("docs/cli.md's demo transcript differs from what demo prints now; run go test ./cmd/bucketlease/cli -run TestDocsDemoTranscript -update-docs\nnow:\n%s\nin the docs:\n%s", stdout, block)
}

// squeeze collapses each run of spaces, so that a swapped name's padding
// does not count.
func squeeze(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.Join(lines, "\n")
}

// cliTranscript splits the page docs at the fenced transcript that starts
// with head: what comes before head, the transcript's body up to its
// closing fence, and what comes after that fence.
func cliTranscript(t *testing.T, docs, head string) (before, block, after string) {
	t.Helper()
	b, err := os.ReadFile(docs)
	if err != nil {
		t.Fatal(err)
	}
	before, rest, ok := strings.Cut(string(b), head)
	if !ok {
		t.Fatalf("%s has no transcript starting %q", docs, head)
	}
	block, after, ok = strings.Cut(rest, "```\n")
	if !ok {
		t.Fatalf("%s: the transcript starting %q has no end", docs, head)
	}
	return before, block, after
}
