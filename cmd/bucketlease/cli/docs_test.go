package cli

import (
	"flag"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestDocsInStep: docs/cli.md lists every exit code "bucketlease help"
// lists, and names every flag of every command as the help spells it.
func TestDocsInStep(t *testing.T) {
	b, err := os.ReadFile("../../../docs/cli.md")
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

// TestExitCodesNameEveryCommand: the main exit-code table, in "bucketlease
// help" and in docs/cli.md, names every subcommand, and every code of a
// command's own table (put's) is on a row of the main table that names
// that command.
func TestExitCodesNameEveryCommand(t *testing.T) {
	b, err := os.ReadFile("../../../docs/cli.md")
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
