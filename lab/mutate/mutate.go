// Package mutate is the project's mutation test of its safety lines: a list
// of hand-made mutants (mutants.txt), each a small change that brings back
// a way for the lease to fail, and the code that applies one at a time to a
// scratch copy of the module and reports whether the tests that should
// catch it do. scripts/mutate runs it (lab/mutate/cmd/mutate).
//
// A mutant whose original snippet no longer occurs exactly once in its
// files is stale: the code moved or changed, and the list needs refreshing.
// It is neither killed nor survived.
package mutate

import (
	"bufio"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// List is the project's mutant list, mutants.txt; its header documents the
// format.
//
//go:embed mutants.txt
var List string

// Mutant is one change to the code that the tests must catch.
type Mutant struct {
	ID   string   // short and unique
	What string   // one line: the defect the mutant brings back
	File string   // the files it may change, relative to the module root: space-separated globs
	Pkgs []string // the packages whose tests must catch it
	Run  string   // the -run pattern, or "" for every test of Pkgs
	// Slow marks a mutant of the slow tier (tier: slow): its tests run
	// real processes against the emulators, for minutes, and the mutation
	// tool runs it only when asked.
	Slow  bool
	Edits []Edit // applied in order
	Line  int    // where its block starts in the list
}

// Edit replaces Old, which must occur exactly once in the mutant's files,
// by New.
type Edit struct {
	Old, New string
}

// Parse reads a mutant list: blocks of "key: value" lines separated by
// blank lines, "#" lines being comments. The keys are id, what, file, pkg
// (space-separated packages), run (optional), tier (optional: slow), and one
// or more old/new pairs,
// in whose values \n is a newline, \t a tab and \\ a backslash.
func Parse(r io.Reader) ([]Mutant, error) {
	var (
		out  []Mutant
		cur  *Mutant
		old  *string
		ids  = map[string]int{}
		line int
	)
	finish := func() error {
		if cur == nil {
			return nil
		}
		m := cur
		cur = nil
		switch {
		case old != nil:
			return fmt.Errorf("line %d: mutant %q: old without new", m.Line, m.ID)
		case m.ID == "" || m.What == "" || m.File == "" || len(m.Pkgs) == 0 || len(m.Edits) == 0:
			return fmt.Errorf("line %d: a mutant needs id, what, file, pkg and an old/new pair", m.Line)
		case ids[m.ID] != 0:
			return fmt.Errorf("line %d: mutant id %q is used at line %d too", m.Line, m.ID, ids[m.ID])
		}
		if m.Run != "" {
			if _, err := regexp.Compile(m.Run); err != nil {
				return fmt.Errorf("line %d: mutant %q: run: %v", m.Line, m.ID, err)
			}
		}
		for _, e := range m.Edits {
			if e.Old == "" || e.Old == e.New {
				return fmt.Errorf("line %d: mutant %q: an edit must change a non-empty snippet", m.Line, m.ID)
			}
		}
		ids[m.ID] = m.Line
		out = append(out, *m)
		return nil
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line++
		text := sc.Text()
		if strings.HasPrefix(text, "#") {
			continue
		}
		if strings.TrimSpace(text) == "" {
			if err := finish(); err != nil {
				return nil, err
			}
			old = nil
			continue
		}
		key, value, ok := strings.Cut(text, ":")
		if !ok {
			return nil, fmt.Errorf("line %d: want \"key: value\", got %q", line, text)
		}
		value = strings.TrimPrefix(value, " ")
		if cur == nil {
			cur = &Mutant{Line: line}
		}
		switch key {
		case "id":
			cur.ID = value
		case "what":
			cur.What = value
		case "file":
			cur.File = value
		case "pkg":
			cur.Pkgs = strings.Fields(value)
		case "run":
			cur.Run = value
		case "tier":
			if value != "slow" {
				return nil, fmt.Errorf("line %d: tier %q: the only tier to name is slow", line, value)
			}
			cur.Slow = true
		case "old":
			if old != nil {
				return nil, fmt.Errorf("line %d: old follows old without a new", line)
			}
			v, err := unescape(value)
			if err != nil {
				return nil, fmt.Errorf("line %d: %v", line, err)
			}
			old = &v
		case "new":
			if old == nil {
				return nil, fmt.Errorf("line %d: new without an old before it", line)
			}
			v, err := unescape(value)
			if err != nil {
				return nil, fmt.Errorf("line %d: %v", line, err)
			}
			cur.Edits = append(cur.Edits, Edit{Old: *old, New: v})
			old = nil
		default:
			return nil, fmt.Errorf("line %d: unknown key %q", line, key)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if err := finish(); err != nil {
		return nil, err
	}
	return out, nil
}

// unescape turns \n, \t and \\ into a newline, a tab and a backslash.
func unescape(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 == len(s) {
			return "", errors.New("a trailing backslash")
		}
		i++
		switch s[i] {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case '\\':
			b.WriteByte('\\')
		default:
			return "", fmt.Errorf("unknown escape \\%c", s[i])
		}
	}
	return b.String(), nil
}

// StaleError says why a mutant cannot be applied to the tree: a snippet
// occurs in none of its files, or in more than one place.
type StaleError struct {
	Edit    int // which edit, from 1
	Matches int
}

func (e *StaleError) Error() string {
	if e.Matches == 0 {
		return fmt.Sprintf("edit %d: the original snippet occurs nowhere", e.Edit)
	}
	return fmt.Sprintf("edit %d: the original snippet occurs %d times; make it longer", e.Edit, e.Matches)
}

// Applied is a mutant applied to a tree, and how to undo it.
type Applied struct {
	Where    string            // file:line of the first edit
	Files    []string          // the files it changed, relative to the root, with slashes
	original map[string][]byte // path -> contents before the mutant
}

// Restore puts back every file the mutant changed.
func (a *Applied) Restore() error {
	var first error
	for path, data := range a.original {
		if err := os.WriteFile(path, data, 0o644); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Apply applies m to the module tree at root. Each edit's snippet must
// occur exactly once in all the files m.File names (test files excluded), or
// Apply changes nothing and returns a *StaleError.
func Apply(root string, m Mutant) (*Applied, error) {
	seen := map[string]bool{}
	var files []string
	for _, pattern := range strings.Fields(m.File) {
		matches, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(pattern)))
		if err != nil {
			return nil, err
		}
		for _, f := range matches {
			if !seen[f] {
				seen[f] = true
				files = append(files, f)
			}
		}
	}
	sort.Strings(files)
	contents := map[string]string{}
	var paths []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		contents[f] = string(data)
		paths = append(paths, f)
	}
	a := &Applied{original: map[string][]byte{}}
	for i, e := range m.Edits {
		n, at := 0, ""
		for _, p := range paths {
			if c := strings.Count(contents[p], e.Old); c > 0 {
				n += c
				at = p
			}
		}
		if n != 1 {
			return nil, &StaleError{Edit: i + 1, Matches: n}
		}
		if _, ok := a.original[at]; !ok {
			a.original[at] = []byte(contents[at])
		}
		if i == 0 {
			rel, _ := filepath.Rel(root, at)
			line := 1 + strings.Count(contents[at][:strings.Index(contents[at], e.Old)], "\n")
			a.Where = fmt.Sprintf("%s:%d", filepath.ToSlash(rel), line)
		}
		contents[at] = strings.Replace(contents[at], e.Old, e.New, 1)
	}
	for p := range a.original {
		if err := os.WriteFile(p, []byte(contents[p]), 0o644); err != nil {
			_ = a.Restore()
			return nil, err
		}
		rel, _ := filepath.Rel(root, p)
		a.Files = append(a.Files, filepath.ToSlash(rel))
	}
	sort.Strings(a.Files)
	return a, nil
}
