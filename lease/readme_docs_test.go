package lease_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// The README's links, and the promise table it points to (docs/promises.md),
// checked against the repository: a renamed page, heading or test breaks
// these tests rather than the front page.

// TestReadmeLinks: every relative link in README.md and docs/promises.md
// names a file that exists and, with a #fragment into a Markdown file, a
// heading that it has. The control: a link to a missing page and one to a
// missing heading are both caught.
func TestReadmeLinks(t *testing.T) {
	for _, page := range []string{"../README.md", "../docs/promises.md"} {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range brokenLinks(page, string(text)) {
			t.Errorf("%s: %s", page, p)
		}
	}
	control := "[a](docs/no-such-page.md) [b](docs/cli.md#no-such-heading) [c](docs/cli.md#bucketlease-put) [d](#develop)\n## Develop\n"
	got := brokenLinks("../README.md", control)
	if len(got) != 2 || !strings.Contains(got[0], "no-such-page.md") || !strings.Contains(got[1], "no-such-heading") {
		t.Errorf("control: want the missing page and the missing heading caught, and nothing else; got %q", got)
	}
}

var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// brokenLinks returns a problem for each relative link of text, the
// contents of the Markdown file page, that does not resolve.
func brokenLinks(page, text string) []string {
	var problems []string
	for _, m := range mdLink.FindAllStringSubmatch(withoutCode(text), -1) {
		target := m[1]
		if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
			continue
		}
		file, frag, _ := strings.Cut(target, "#")
		path := page
		if file != "" {
			path = filepath.Join(filepath.Dir(page), filepath.FromSlash(file))
		}
		body, err := os.ReadFile(path)
		if err != nil {
			if _, serr := os.Stat(path); serr == nil && frag == "" {
				continue // a directory, or a file that exists
			}
			problems = append(problems, "link "+target+": no such file")
			continue
		}
		if frag == "" || !strings.HasSuffix(path, ".md") {
			continue
		}
		if !headingAnchors(string(body))[frag] {
			problems = append(problems, "link "+target+": no heading with that anchor")
		}
	}
	return problems
}

// withoutCode is text without its fenced code blocks and inline code
// spans, where a "](...)" is not a link.
func withoutCode(text string) string {
	var b strings.Builder
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			b.WriteString(inlineCode.ReplaceAllString(line, "") + "\n")
		}
	}
	return b.String()
}

var inlineCode = regexp.MustCompile("`[^`]*`")

// headingAnchors returns the anchors GitHub gives the headings of a
// Markdown document: lower case, spaces to hyphens, punctuation but hyphens
// and underscores dropped, and -1, -2… after repeats.
func headingAnchors(doc string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var a strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case r == ' ':
				a.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				a.WriteRune(r)
			}
		}
		s := a.String()
		if n := seen[s]; n > 0 {
			anchors[s+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[s] = true
		}
		seen[s]++
	}
	return anchors
}

// TestPromisesPageNamesRealTests: every name in the "Tested by" column of
// the promise table in docs/promises.md exists in this repository: a
// TestXxx is a test function, any other name a drivertest check, a
// simulator fault class (a string in drivertest or lab/simulation) or
// a mutant (an id in lab/mutate/mutants.txt). The control: a made-up
// test name and a made-up check are caught.
func TestPromisesPageNamesRealTests(t *testing.T) {
	doc, err := os.ReadFile("../docs/promises.md")
	if err != nil {
		t.Fatal(err)
	}
	names := promiseTableNames(t, string(doc))
	if len(names) < 14 {
		t.Fatalf("docs/promises.md's promise table names %d tests, want its 16 rows' worth; is the table there?", len(names))
	}
	known := repositoryNames(t)
	for _, n := range names {
		if !known(n) {
			t.Errorf("docs/promises.md's promise table names %s, which is no test, check, fault class or mutant in this repository", n)
		}
	}
	for _, n := range []string{"TestNoSuchPromiseAnywhere", "no-such-drivertest-check"} {
		if known(n) {
			t.Errorf("control: %s was taken for a name in the repository", n)
		}
	}
}

var backticked = regexp.MustCompile("`([^`]+)`")

// promiseTableNames returns the test and check names in the last column of
// the table under "## What it promises", and fails t if a row names no test.
func promiseTableNames(t *testing.T, doc string) []string {
	t.Helper()
	_, section, ok := strings.Cut(doc, "\n## What it promises\n")
	if !ok {
		t.Fatal(`docs/promises.md has no section "## What it promises"`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var names []string
	rows := 0
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if !strings.HasPrefix(line, "| ") || len(cells) != 3 || cells[2] == "Tested by" {
			continue
		}
		rows++
		tests := 0
		for _, m := range backticked.FindAllStringSubmatch(cells[2], -1) {
			name := m[1]
			if strings.ContainsAny(name, " =(") {
				continue // a flag or a value, not a name
			}
			if strings.HasPrefix(name, "Test") {
				tests++
			}
			names = append(names, name)
		}
		if tests == 0 {
			t.Errorf("docs/promises.md: the promise %q names no test", cells[0])
		}
	}
	if rows == 0 {
		t.Fatal("docs/promises.md's promise section has no table rows")
	}
	return names
}

// repositoryNames reads the module's Go files and mutants.txt and returns
// whether a name is one of its tests, checks, fault classes or mutants.
func repositoryNames(t *testing.T) func(string) bool {
	t.Helper()
	var tests, checks strings.Builder
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.HasSuffix(path, "_test.go") {
			tests.Write(b)
		}
		slash := filepath.ToSlash(path)
		if strings.HasPrefix(slash, "../drivertest/") || strings.HasPrefix(slash, "../lab/simulation/") {
			checks.Write(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	mutants, err := os.ReadFile("../lab/mutate/mutants.txt")
	if err != nil {
		t.Fatal(err)
	}
	return func(name string) bool {
		if strings.HasPrefix(name, "Test") {
			return strings.Contains(tests.String(), "\nfunc "+name+"(t *testing.T)")
		}
		return strings.Contains(checks.String(), `"`+name+`"`) ||
			strings.Contains("\n"+string(mutants), "\nid: "+name+"\n")
	}
}
