package main

import (
	"flag"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestDocsInStep: docs/cli.md lists every exit code "bucketlease help"
// lists, and names every flag of every command as the help spells it.
func TestDocsInStep(t *testing.T) {
	b, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	docs := string(b)
	codes := regexp.MustCompile(`(?m)^  (\d+) `).FindAllStringSubmatch(exitCodesHelp, -1)
	if len(codes) < 10 {
		t.Fatalf("found %d exit codes in the help", len(codes))
	}
	for _, c := range codes {
		if !strings.Contains(docs, "| "+c[1]+" |") {
			t.Errorf("docs/cli.md's exit codes lack %s", c[1])
		}
	}
	for _, c := range commands() {
		fs, _ := c.newFlagSet(nil)
		fs.VisitAll(func(f *flag.Flag) {
			if _, short := flagAliases[f.Name]; short {
				return
			}
			if !strings.Contains(docs, "--"+f.Name) {
				t.Errorf("docs/cli.md does not mention %s's flag --%s", c.name, f.Name)
			}
		})
	}
	// The control: a code the help does not list is not found either.
	if strings.Contains(docs, "| 99 |") {
		t.Error("docs/cli.md lists an exit code 99")
	}
}

var updateDocs = flag.Bool("update-docs", false, "rewrite docs/cli.md's checked transcripts from fresh runs")

// docsProbeDir is the directory the file:// probe transcript in docs/cli.md
// names; the test probes a fresh one and writes this name in its place.
const docsProbeDir = "/var/tmp/bl-doc/db3"

// TestDocsProbeTranscript: the file:// probe transcript in docs/cli.md is
// exactly what the command prints today (stderr's first line, then stdout,
// then the exit code), so it cannot drift from the checks drivertest runs.
// Run with -update-docs to rewrite it.
func TestDocsProbeTranscript(t *testing.T) {
	const docs = "../../docs/cli.md"
	b, err := os.ReadFile(docs)
	if err != nil {
		t.Fatal(err)
	}
	head := "```\n$ bucketlease probe file://" + docsProbeDir + "\n"
	before, rest, ok := strings.Cut(string(b), head)
	if !ok {
		t.Fatalf("docs/cli.md has no transcript starting %q", head)
	}
	block, after, ok := strings.Cut(rest, "```\n")
	if !ok {
		t.Fatal("the transcript has no end")
	}
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
	t.Errorf("docs/cli.md's probe transcript differs from what probe prints now; run go test ./cmd/bucketlease -run TestDocsProbeTranscript -update-docs\nnow:\n%s\nin the docs:\n%s", got, block)
}

// TestDocsDemoTranscript: the demo transcript in docs/cli.md is exactly what
// the demo prints (with alpha and beta swapped if the race went the other
// way). Run with -update-docs to rewrite it.
func TestDocsDemoTranscript(t *testing.T) {
	const docs = "../../docs/cli.md"
	b, err := os.ReadFile(docs)
	if err != nil {
		t.Fatal(err)
	}
	head := "```\n$ go run ./cmd/bucketlease demo\n"
	before, rest, ok := strings.Cut(string(b), head)
	if !ok {
		t.Fatalf("docs/cli.md has no transcript starting %q", head)
	}
	block, after, ok := strings.Cut(rest, "```\n")
	if !ok {
		t.Fatal("the transcript has no end")
	}
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
	t.Errorf("docs/cli.md's demo transcript differs from what demo prints now; run go test ./cmd/bucketlease -run TestDocsDemoTranscript -update-docs\nnow:\n%s\nin the docs:\n%s", stdout, block)
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

// TestExitCodesNameEveryCommand: the main exit-code table, in "bucketlease
// help" and in docs/cli.md, names every subcommand, and every code of a
// command's own table (put's) is on a row of the main table that names
// that command.
func TestExitCodesNameEveryCommand(t *testing.T) {
	b, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	_, docsTable, ok := strings.Cut(string(b), "\n## Exit codes\n")
	if !ok {
		t.Fatal("docs/cli.md has no section ## Exit codes")
	}
	docsTable, _, _ = strings.Cut(docsTable, "\n## ")
	for _, c := range commands() {
		word := regexp.MustCompile(`\b` + c.name + `\b`)
		if !word.MatchString(exitCodesHelp) {
			t.Errorf("the help's exit codes do not name %s", c.name)
		}
		if !strings.Contains(docsTable, "`"+c.name) {
			t.Errorf("docs/cli.md's exit codes do not name `%s`", c.name)
		}
	}
	// The help's rows, a code and its continuation lines.
	helpRows := map[string]string{}
	last := ""
	for _, l := range strings.Split(exitCodesHelp, "\n")[1:] {
		if m := regexp.MustCompile(`^  (\d+) `).FindStringSubmatch(l); m != nil {
			last = m[1]
		}
		helpRows[last] += l + "\n"
	}
	docsRows := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^\| (\d+) \|(.*)$`).FindAllStringSubmatch(docsTable, -1) {
		docsRows[m[1]] = m[2]
	}
	for _, own := range []struct{ name, table string }{{"put", putExitCodesHelp}} {
		for _, m := range regexp.MustCompile(`(?m)^  (\d+) `).FindAllStringSubmatch(own.table, -1) {
			code := m[1]
			if code == "1" || code == "2" || code == "0" {
				continue // every command's
			}
			if !strings.Contains(helpRows[code], own.name) {
				t.Errorf("%s exits %s, but the help's row for %s does not name it: %q", own.name, code, code, helpRows[code])
			}
			if !strings.Contains(docsRows[code], "`"+own.name) {
				t.Errorf("%s exits %s, but docs/cli.md's row for %s does not name it: %q", own.name, code, code, docsRows[code])
			}
		}
	}
}
