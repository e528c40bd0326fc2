package mutate

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestList: the project's list parses, and has a mutant of every part of
// the safety lines: the fence, the probe, renewal, release, ownership by
// content, the fenced bucket, the watchdog and the drivers' errors.
func TestList(t *testing.T) {
	ms, err := Parse(strings.NewReader(List))
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) < 40 {
		t.Errorf("only %d mutants", len(ms))
	}
	for _, part := range []string{"lease/", "cmd/bucketlease/internal/supervise/watchdog.go", "s3proto", "driver/gcs/", "driver/azure/", "driver/op.go"} {
		found := false
		for _, m := range ms {
			found = found || strings.Contains(m.File, part)
		}
		if !found {
			t.Errorf("no mutant of %s", part)
		}
	}
}

func TestParse(t *testing.T) {
	ms, err := Parse(strings.NewReader(`# a comment

id: a
what: the first
file: x/*.go
pkg: ./x ./y
run: TestA|TestB
old: if a {\n\treturn\n}
new: if false {\n\treturn\n}
old: c\\d
new: e

id: b
what: the second
file: y.go
pkg: ./y
tier: slow
old: 1
new: 2
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 {
		t.Fatalf("%d mutants, want 2", len(ms))
	}
	a := ms[0]
	if a.ID != "a" || a.File != "x/*.go" || len(a.Pkgs) != 2 || a.Run != "TestA|TestB" || len(a.Edits) != 2 {
		t.Errorf("mutant a: %+v", a)
	}
	if a.Edits[0].Old != "if a {\n\treturn\n}" || a.Edits[1].Old != `c\d` {
		t.Errorf("escapes: %q", a.Edits)
	}
	if a.Slow || !ms[1].Slow {
		t.Errorf("tiers: a slow %v, b slow %v; want only b", a.Slow, ms[1].Slow)
	}
	for name, bad := range map[string]string{
		"no edit":      "id: a\nwhat: w\nfile: f\npkg: p\n",
		"old alone":    "id: a\nwhat: w\nfile: f\npkg: p\nold: x\n",
		"new alone":    "id: a\nwhat: w\nfile: f\npkg: p\nnew: x\n",
		"same id":      "id: a\nwhat: w\nfile: f\npkg: p\nold: x\nnew: y\n\nid: a\nwhat: w\nfile: f\npkg: p\nold: x\nnew: y\n",
		"no change":    "id: a\nwhat: w\nfile: f\npkg: p\nold: x\nnew: x\n",
		"unknown key":  "id: a\nwhy: w\n",
		"bad escape":   "id: a\nwhat: w\nfile: f\npkg: p\nold: \\q\nnew: y\n",
		"bad run":      "id: a\nwhat: w\nfile: f\npkg: p\nrun: (\nold: x\nnew: y\n",
		"not a key":    "id: a\nwhatever\n",
		"missing what": "id: a\nfile: f\npkg: p\nold: x\nnew: y\n",
		"unknown tier": "id: a\nwhat: w\nfile: f\npkg: p\ntier: fast\nold: x\nnew: y\n",
	} {
		if _, err := Parse(strings.NewReader(bad)); err == nil {
			t.Errorf("%s: parsed without an error", name)
		}
	}
}

// TestApply: a mutant changes the one place its snippet occurs, in any of
// its files but test files, and Restore undoes it; a snippet that occurs
// nowhere or twice is stale, and nothing is changed.
func TestApply(t *testing.T) {
	root := t.TempDir()
	write := func(name, data string) {
		t.Helper()
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(name string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	write("p/a.go", "package p\n\nfunc A() bool { return x < y }\n")
	write("p/b.go", "package p\n\nfunc B() bool { return twice || twice }\n")
	write("p/a_test.go", "package p\n\n// x < y\n")

	a, err := Apply(root, Mutant{ID: "m", File: "q/*.go p/*.go", Edits: []Edit{{"x < y", "x <= y"}, {"A()", "A2()"}}})
	if err != nil {
		t.Fatal(err)
	}
	if a.Where != "p/a.go:3" {
		t.Errorf("Where = %q", a.Where)
	}
	if len(a.Files) != 1 || a.Files[0] != "p/a.go" {
		t.Errorf("Files = %q", a.Files)
	}
	if got := read("p/a.go"); got != "package p\n\nfunc A2() bool { return x <= y }\n" {
		t.Errorf("mutated: %q", got)
	}
	if got := read("p/a_test.go"); got != "package p\n\n// x < y\n" {
		t.Errorf("a test file was changed: %q", got)
	}
	if err := a.Restore(); err != nil {
		t.Fatal(err)
	}
	if got := read("p/a.go"); got != "package p\n\nfunc A() bool { return x < y }\n" {
		t.Errorf("restored: %q", got)
	}

	for _, tc := range []struct {
		edits   []Edit
		matches int
	}{
		{[]Edit{{"nowhere", "x"}}, 0},
		{[]Edit{{"twice", "x"}}, 2},
		{[]Edit{{"x < y", "z"}, {"x < y", "w"}}, 0}, // the first edit removed it
	} {
		_, err := Apply(root, Mutant{ID: "s", File: "p/*.go", Edits: tc.edits})
		var stale *StaleError
		if !errors.As(err, &stale) || stale.Matches != tc.matches {
			t.Errorf("%v: %v, want a StaleError with %d matches", tc.edits, err, tc.matches)
		}
	}
	if got := read("p/a.go"); got != "package p\n\nfunc A() bool { return x < y }\n" {
		t.Errorf("a stale mutant changed a file: %q", got)
	}
}
