package lease_test

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeExampleIsThisOne checks that every statement of the README's Go
// example appears in Example_readme, which runs, so the front page cannot
// drift from code that works. Comments, spacing and the URL may differ.
func TestReadmeExampleIsThisOne(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "```go\n")
	block, _, ok2 := strings.Cut(block, "```")
	_, example, ok3 := strings.Cut(string(src), "func Example_readme() {")
	example, _, _ = strings.Cut(example, "\n}\n")
	if !ok || !ok2 || !ok3 {
		t.Fatal("README has no Go example, or example_test.go no Example_readme")
	}
	have := map[string]bool{}
	for _, line := range strings.Split(example, "\n") {
		have[statement(line)] = true
	}
	_, body, _ := strings.Cut(block, "\n)\n") // after the imports
	n := 0
	for _, line := range strings.Split(body, "\n") {
		st := statement(line)
		if st == "" || strings.Contains(st, "driver.Open(") {
			continue
		}
		n++
		if !have[st] {
			t.Errorf("README example line %q is not in Example_readme", st)
		}
	}
	if n < 8 {
		t.Fatalf("only %d statements found in the README example", n)
	}
}

// statement is line without its comment and with spaces squeezed; "" for a
// comment or a blank line.
func statement(line string) string {
	if i := strings.Index(line, "//"); i >= 0 {
		line = line[:i]
	}
	line = strings.ReplaceAll(line, "_, err = w.Put", "w.Put")
	return strings.Join(strings.Fields(line), " ")
}
