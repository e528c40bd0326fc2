// Command surface measures the library's public surface and the size of
// its shipped code, package by package, with one command run from the
// repository's root:
//
//	go run ./lab/surface             # a table
//	go run ./lab/surface -json       # the same, for machines
//	go run ./lab/surface -check      # every target below, met or not; exit 1 if one is not
//	go run ./lab/surface ./lease     # other packages (go list patterns)
//
// Without patterns it measures ./... less the packages under -exclude
// (lab/, examples/ and internal/testsupport/, which nothing shipped
// imports): the shipped packages. It reads every non-test .go file of a
// package's directory, whatever its build constraints, and counts:
//
//   - exports: exported types, functions, methods whose type is exported,
//     the methods an exported interface declares (not those it embeds),
//     exported fields of exported structs (an embedded field by its type's
//     name; the fields of a struct type written out in a field too),
//     constants and variables;
//   - methods per exported type, value and pointer receivers together (an
//     interface: the methods it declares); the table shows the type with
//     the most, -json every type;
//   - doc: the lines of the package comment (every file's, added up);
//   - go doc: the lines `go doc -all` prints for the package;
//   - files and lines (as wc -l counts them), and code: lines holding a
//     token that is not a comment;
//   - the longest function (from func to the closing brace), functions
//     over 80 lines, the longest file and files over 500 lines;
//   - context data channels: exported functions and methods that carry
//     request or response data in a context: those that take a
//     context.Context and return one, less those that also return a
//     context.CancelFunc (a scope of cancellation, as context.WithCancel,
//     such as Lease.Fence), and those that store a value in a context
//     (context.WithValue) or read one from a context they are given (its
//     Value method); those of internal packages are listed apart, and no
//     target judges them, since no user can call them;
//   - the exported top-level Register… functions of the driver author's
//     package (-author).
//
// The targets -check judges, constants below:
//
//   - the user's package (-user; none by default): at most 50 exports;
//   - the driver author's package (-author, driver): at most 90;
//   - -lease (lease): at most 80, and *Lease at most 12 methods;
//   - no context data channel outside internal packages;
//   - one Register… function in -author;
//   - every package comment at most 60 lines;
//   - the command's package (-cli, cmd/bucketlease/cli, which holds the
//     commands that cmd/bucketlease's main runs): at most 3,500 lines in at
//     most 25 files;
//   - no function over 80 lines, no file over 500;
//   - shipped lines not grown: at most shippedBaseline, the default set's
//     lines when the targets were set. The totals are of the packages
//     measured, so this target means something for the default set only.
//
// -user, -author, -lease and -cli name packages by their directory under
// the root; -user and -author take a comma-separated list, whose exports add
// up. A named package that was not measured fails its target.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
)

// The targets -check judges.
const (
	maxUserExports   = 50
	maxAuthorExports = 90
	maxLeaseExports  = 80
	leaseType        = "Lease"
	maxLeaseMethods  = 12
	maxContexts      = 0
	maxRegisters     = 1
	maxDocLines      = 60
	maxCLILines      = 3500
	maxCLIFiles      = 25
	maxFuncLines     = 80
	maxFileLines     = 500
	// shippedBaseline is the shipped lines of the default set on 701591e,
	// when these targets were set.
	shippedBaseline = 27850
)

// Options say what to measure and which packages the targets name.
type Options struct {
	Root     string   // the module's root
	Patterns []string // go list patterns; none is ./... less Exclude
	Exclude  []string
	User     []string
	Author   []string
	Lease    string
	CLI      string
	Limits   Limits
}

// Report is the measure of every package, and the totals.
type Report struct {
	Packages []*Package `json:"packages"`
	Totals   Totals     `json:"totals"`
	// Contexts are the context data channels, package.Name, outside
	// internal packages (those a user can call); InternalContexts, those
	// in internal packages, which no target judges. Registers are the
	// Register… functions of the author's packages.
	Contexts         []string `json:"contexts"`
	InternalContexts []string `json:"internal_contexts"`
	Registers        []string `json:"registers"`
}

// internal reports whether the package in dir is internal to the module.
func internal(dir string) bool {
	return dir == "internal" || strings.HasPrefix(dir, "internal/") ||
		strings.Contains(dir, "/internal/") || strings.HasSuffix(dir, "/internal")
}

// Totals add up the packages measured.
type Totals struct {
	Packages  int `json:"packages"`
	Exports   int `json:"exports"`
	Files     int `json:"files"`
	Lines     int `json:"lines"`
	Code      int `json:"code"`
	FuncsOver int `json:"funcs_over"`
	FilesOver int `json:"files_over"`
}

func main() {
	o := Options{Root: ".", Limits: Limits{FuncLines: maxFuncLines, FileLines: maxFileLines}}
	asJSON := flag.Bool("json", false, "print the report as JSON")
	check := flag.Bool("check", false, "judge the targets; exit 1 if one is not met")
	exclude := flag.String("exclude", "lab,examples,internal/testsupport", "directories left out of ./... (comma-separated)")
	user := flag.String("user", "bucket", "the user's package(s), comma-separated directories")
	author := flag.String("author", "driver", "the driver author's package(s), comma-separated directories")
	flag.StringVar(&o.Lease, "lease", "lease", "the lease package's directory")
	flag.StringVar(&o.CLI, "cli", "cmd/bucketlease/cli", "the directory of the command's commands")
	flag.StringVar(&o.Root, "C", ".", "the module's root")
	flag.Parse()
	o.Patterns, o.Exclude = flag.Args(), split(*exclude)
	o.User, o.Author = split(*user), split(*author)

	r, err := run(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "surface:", err)
		os.Exit(2)
	}
	switch {
	case *check:
		if unmet := judge(r, o, os.Stdout); unmet > 0 {
			fmt.Printf("%d targets not met\n", unmet)
			os.Exit(1)
		}
	case *asJSON:
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			fmt.Fprintln(os.Stderr, "surface:", err)
			os.Exit(2)
		}
	default:
		table(r, o, os.Stdout)
	}
}

func split(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.Trim(strings.TrimSpace(f), "/"); f != "" {
			out = append(out, strings.TrimPrefix(f, "./"))
		}
	}
	return out
}

// run measures the packages o names.
func run(o Options) (*Report, error) {
	pkgs, err := list(o)
	if err != nil {
		return nil, err
	}
	r := &Report{}
	for _, lp := range pkgs {
		p, err := measure(filepath.Join(o.Root, filepath.FromSlash(lp.dir)), lp.path, o.Limits)
		if err != nil {
			return nil, err
		}
		p.Dir = lp.dir
		if p.GoDocLines, err = goDocLines(o.Root, lp.dir); err != nil {
			return nil, err
		}
		r.add(p, slices.Contains(o.Author, p.Dir))
	}
	return r, nil
}

func (r *Report) add(p *Package, author bool) {
	r.Packages = append(r.Packages, p)
	t := &r.Totals
	t.Packages++
	t.Exports += p.Exports
	t.Files += p.Files
	t.Lines += p.Lines
	t.Code += p.Code
	t.FuncsOver += p.FuncsOver
	t.FilesOver += p.FilesOver
	for _, c := range p.Contexts {
		if internal(p.Dir) {
			r.InternalContexts = append(r.InternalContexts, p.Name+"."+c)
		} else {
			r.Contexts = append(r.Contexts, p.Name+"."+c)
		}
	}
	if author {
		for _, f := range p.Registers {
			r.Registers = append(r.Registers, p.Name+"."+f)
		}
	}
}

type listed struct{ path, dir string }

// list runs go list in the root and returns the packages' import paths and
// directories relative to the root.
func list(o Options) ([]listed, error) {
	patterns, exclude := o.Patterns, o.Exclude
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	} else {
		exclude = nil
	}
	root, err := filepath.Abs(o.Root)
	if err != nil {
		return nil, err
	}
	args := append([]string{"list", "-f", "{{.ImportPath}}\t{{.Dir}}"}, patterns...)
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w%s", err, stderr(err))
	}
	var pkgs []listed
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, dir, ok := strings.Cut(line, "\t")
		if !ok {
			continue
		}
		rel, err := filepath.Rel(root, dir)
		if err != nil {
			return nil, err
		}
		rel = filepath.ToSlash(rel)
		if !excluded(rel, exclude) {
			pkgs = append(pkgs, listed{path, rel})
		}
	}
	return pkgs, nil
}

func excluded(rel string, exclude []string) bool {
	for _, e := range exclude {
		if rel == e || strings.HasPrefix(rel, e+"/") {
			return true
		}
	}
	return false
}

func stderr(err error) string {
	if ee, ok := err.(*exec.ExitError); ok && len(ee.Stderr) > 0 {
		return ": " + strings.TrimSpace(string(ee.Stderr))
	}
	return ""
}

// goDocLines counts the lines `go doc -all` prints for the package in dir.
func goDocLines(root, dir string) (int, error) {
	cmd := exec.Command("go", "doc", "-all", "./"+dir)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return 0, fmt.Errorf("go doc -all ./%s: %w%s", dir, err, stderr(err))
	}
	return bytes.Count(out, []byte("\n")), nil
}

// table prints the report as an aligned table.
func table(r *Report, o Options, w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "package\texports\tmost methods\tdoc\tgo doc\tfiles\tlines\tcode\tlongest func\t>80\tlongest file\t>500")
	for _, p := range r.Packages {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\t%d\t%d\t%d\t%s %d\t%d\t%s %d\t%d\n",
			p.Dir, p.Exports, mostMethods(p), p.DocLines, p.GoDocLines, p.Files, p.Lines, p.Code,
			p.Longest.Name, p.Longest.Lines, p.FuncsOver, p.LongestFile.Name, p.LongestFile.Lines, p.FilesOver)
	}
	t := r.Totals
	fmt.Fprintf(tw, "total (%d packages)\t%d\t\t\t\t%d\t%d\t%d\t\t%d\t\t%d\n",
		t.Packages, t.Exports, t.Files, t.Lines, t.Code, t.FuncsOver, t.FilesOver)
	tw.Flush()
	fmt.Fprintf(w, "\ncontext data channels (%d): %s\n", len(r.Contexts), names(r.Contexts))
	if len(r.InternalContexts) > 0 {
		fmt.Fprintf(w, "  in internal packages, not judged: %s\n", strings.Join(r.InternalContexts, ", "))
	}
	fmt.Fprintf(w, "Register functions in %s (%d): %s\n", strings.Join(o.Author, ", "), len(r.Registers), names(r.Registers))
}

func names(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ", ")
}

// mostMethods names the exported type with the most methods, and their
// number; the first by name among equals.
func mostMethods(p *Package) string {
	best, n := "-", 0
	for name, m := range p.Methods {
		if m > n || m == n && name < best {
			best, n = name, m
		}
	}
	if n == 0 {
		return "-"
	}
	return fmt.Sprintf("%s %d", best, n)
}
