package main

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
