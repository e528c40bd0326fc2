package main

import (
	"bytes"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSampleCounts measures testdata/sample, whose every count is known
// (its comments say why each identifier counts or not).
func TestSampleCounts(t *testing.T) {
	p, err := measure("testdata/sample", "sample", Limits{FuncLines: 11, FileLines: 20})
	if err != nil {
		t.Fatal(err)
	}
	wantKinds := map[string]int{
		kindConst:  3, // One, Two, Ten
		kindVar:    1, // Default
		kindType:   5, // Lease, Store, Key, Alias, Info (declared twice)
		kindField:  5, // Lease.Name, Lease.Options, Options.Depth, Lease.Reader, Info.OS
		kindMethod: 6, // Lease.Key, Value, Renew, Release, Context, RegisterAll
		kindIface:  2, // Store.Get, Store.Put
		kindFunc:   9, // WithData, Scope, Register, RegisterLocator, Long, Platform (declared twice), Stash, Report, Done
	}
	if !maps.Equal(p.ByKind, wantKinds) {
		t.Errorf("exports by kind: got %v, want %v", p.ByKind, wantKinds)
	}
	if p.Exports != 31 {
		t.Errorf("exports: got %d, want 31", p.Exports)
	}
	if want := map[string]int{"Lease": 6, "Store": 2}; !maps.Equal(p.Methods, want) {
		t.Errorf("methods: got %v, want %v", p.Methods, want)
	}
	if want := []string{"Lease.Context", "Report", "Stash", "WithData"}; !slices.Equal(p.Contexts, want) {
		t.Errorf("context data channels: got %q, want %q", p.Contexts, want)
	}
	if want := []string{"Register", "RegisterLocator"}; !slices.Equal(p.Registers, want) {
		t.Errorf("Register functions: got %q, want %q", p.Registers, want)
	}
	got := []int{p.DocLines, p.Files, p.Lines, p.Funcs, p.FuncsOver, p.FilesOver}
	if want := []int{4, 6, 134, 20, 1, 2}; !slices.Equal(got, want) {
		t.Errorf("doc lines, files, lines, funcs, funcs over 11, files over 20: got %v, want %v", got, want)
	}
	if want := (Sized{"Long", 12}); p.Longest != want {
		t.Errorf("longest function: got %v, want %v", p.Longest, want)
	}
	if want := (Sized{"sample.go", 73}); p.LongestFile != want {
		t.Errorf("longest file: got %v, want %v", p.LongestFile, want)
	}
	if p.Name != "sample" {
		t.Errorf("package name %q", p.Name)
	}
}

// TestCodeLines: blank lines and comments are not code; each line of a raw
// string is.
func TestCodeLines(t *testing.T) {
	src, err := os.ReadFile("testdata/sample/long.go")
	if err != nil {
		t.Fatal(err)
	}
	if n := codeLines(src); n != 17 {
		t.Errorf("long.go: %d code lines, want 17", n)
	}
	if n := codeLines([]byte("// Package p.\npackage p /* x\ny */\n\n")); n != 1 {
		t.Errorf("a package clause and comments: %d code lines, want 1", n)
	}
}

func TestGoDocLines(t *testing.T) {
	n, err := goDocLines("testdata", "sample")
	if err != nil {
		t.Fatal(err)
	}
	if n < 40 {
		t.Errorf("go doc -all printed %d lines of sample", n)
	}
}

// TestRealModule runs on the repository's module as `go run ./lab/surface`
// does from its root: the shipped packages, and no other, with every
// shipped line counted.
func TestRealModule(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list and go doc on every package")
	}
	o := Options{Root: "../..", Exclude: split("lab,examples,internal/testsupport"),
		Author: []string{"driver"}, Lease: "lease", CLI: "cmd/bucketlease",
		Limits: Limits{FuncLines: maxFuncLines, FileLines: maxFileLines}}
	r, err := run(o)
	if err != nil {
		t.Fatal(err)
	}
	dirs := map[string]*Package{}
	for _, p := range r.Packages {
		dirs[p.Dir] = p
		if excluded(p.Dir, o.Exclude) {
			t.Errorf("%s measured, though excluded", p.Dir)
		}
		if p.GoDocLines == 0 || p.Files == 0 || p.Lines == 0 {
			t.Errorf("%s: go doc %d lines, %d files, %d lines", p.Dir, p.GoDocLines, p.Files, p.Lines)
		}
	}
	for _, d := range []string{"lease", "driver", "driver/mem", "drivertest", "cmd/bucketlease"} {
		if dirs[d] == nil {
			t.Errorf("%s not measured", d)
		}
	}
	if p := dirs["lease"]; p != nil && (p.Methods["Lease"] == 0 || p.Exports == 0 || p.DocLines == 0) {
		t.Errorf("lease: %d exports, *Lease %d methods, package comment %d lines", p.Exports, p.Methods["Lease"], p.DocLines)
	}
	if p := dirs["cmd/bucketlease"]; p != nil && p.Name != "main" {
		t.Errorf("cmd/bucketlease is package %s", p.Name)
	}
	if lines := shippedLines(t, "../..", o.Exclude); r.Totals.Lines != lines {
		t.Errorf("total lines %d; the tree's non-test .go files outside %v and testdata hold %d", r.Totals.Lines, o.Exclude, lines)
	}
	var out bytes.Buffer
	table(r, o, &out)
	judge(r, o, &out)
	if !strings.Contains(out.String(), "cmd/bucketlease") || !strings.Contains(out.String(), "*Lease methods") {
		t.Errorf("table and check:\n%s", out.String())
	}
}

// shippedLines counts, by walking the tree, the lines of the non-test .go
// files outside exclude, testdata and other modules.
func shippedLines(t *testing.T, root string, exclude []string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") || excluded(rel, exclude)) {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); rel != "." && err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(rel, ".go") && !strings.HasSuffix(rel, "_test.go") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			n += bytes.Count(b, []byte("\n"))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestJudge: each target at its limit is met and one past it is not; a
// package named but not measured fails, and no user's package is skipped.
func TestJudge(t *testing.T) {
	o := Options{Author: []string{"driver"}, Lease: "lease", CLI: "cmd/x", Limits: Limits{FuncLines: maxFuncLines, FileLines: maxFileLines}}
	r := &Report{}
	r.add(&Package{Dir: "lease", Name: "lease", Exports: maxLeaseExports, Methods: map[string]int{leaseType: maxLeaseMethods}, DocLines: maxDocLines}, false)
	r.add(&Package{Dir: "driver", Name: "driver", Exports: maxAuthorExports + 1, Registers: []string{"Register"}}, true)
	r.add(&Package{Dir: "cmd/x", Name: "main", Lines: maxCLILines, Files: maxCLIFiles}, false)
	r.Totals.Lines = shippedBaseline + 1
	var out bytes.Buffer
	if n := judge(r, o, &out); n != 2 {
		t.Errorf("%d targets not met, want 2 (the author's exports, shipped lines):\n%s", n, out.String())
	}
	if !strings.Contains(out.String(), "skipped  the user's exports") {
		t.Errorf("no user's package, yet its target is not skipped:\n%s", out.String())
	}
	o.User = []string{"user"}
	out.Reset()
	if n := judge(r, o, &out); n != 3 || !strings.Contains(out.String(), "package user not measured") {
		t.Errorf("%d targets not met, want 3 (user's package not measured):\n%s", n, out.String())
	}
}
