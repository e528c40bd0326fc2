// Command mutate runs the project's mutation test of its safety lines
// (lab/mutate/mutants.txt): it copies the module at a revision into a
// scratch directory (git archive, never the working tree), applies each
// mutant in turn, runs the tests that should catch it, and prints what
// became of each and the score. scripts/mutate runs it.
//
//	mutate [-rev HEAD] [-only REGEXP] [-touched REV] [-slow] [-timeout D] [-check] [-keep]
//
// -only keeps the mutants whose id matches; -touched keeps those that
// change a file changed between REV and the revision mutated (the fast
// subset for a change: -touched main). The mutants of the slow tier (tier:
// slow), whose tests run real processes against the emulators, run only
// with -slow, with BUCKETLEASE_REQUIRE_EMULATORS=1 so that a missing
// emulator fails their tests unmutated (reported skipped) instead of
// letting them pass.
//
// Each mutant ends killed (its tests failed; if they also hung, the line
// says so), timeout (they only hung: counted as caught, and listed), survived (they passed), stale (its snippet no
// longer occurs exactly once: refresh the list), broken (the mutant does not
// compile: fix the list) or skipped (its tests fail without any mutant).
package main

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/mushroomdb/bucketlease/lab/mutate"
)

func main() {
	rev := flag.String("rev", "HEAD", "the git revision to mutate")
	only := flag.String("only", "", "run only the mutants whose id matches this regexp")
	touched := flag.String("touched", "", "run only the mutants that change a file changed between this revision and -rev")
	slow := flag.Bool("slow", false, "run the slow tier too (chaos and emulator tests: start the emulators first)")
	timeout := flag.Duration("timeout", 0, "per-mutant timeout (default: 3 times its tests' unmutated time plus a minute)")
	check := flag.Bool("check", false, "only report which mutants apply (no tests run)")
	keep := flag.Bool("keep", false, "keep the scratch copy")
	flag.Parse()
	if err := run(*rev, *only, *touched, *slow, *timeout, *check, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "mutate:", err)
		os.Exit(2)
	}
}

// result is what became of one mutant.
type result struct {
	m      mutate.Mutant
	status string // killed, timeout, survived, stale, broken, skipped
	where  string
	detail string
	took   time.Duration
}

func run(rev, only, touched string, slow bool, timeout time.Duration, check, keep bool) error {
	mutants, err := mutate.Parse(strings.NewReader(mutate.List))
	if err != nil {
		return fmt.Errorf("mutants.txt: %w", err)
	}
	var re *regexp.Regexp
	if only != "" {
		if re, err = regexp.Compile(only); err != nil {
			return err
		}
	}
	var sel []mutate.Mutant
	slowLeft := 0
	for _, m := range mutants {
		switch {
		case re != nil && !re.MatchString(m.ID):
		case m.Slow && !slow:
			slowLeft++
		default:
			sel = append(sel, m)
		}
	}
	mutants = sel
	sha, err := output("git", "rev-parse", "--verify", rev+"^{commit}")
	if err != nil {
		return err
	}
	sha = strings.TrimSpace(sha)
	var changed map[string]bool
	if touched != "" {
		diff, err := output("git", "diff", "--name-only", touched, sha)
		if err != nil {
			return err
		}
		changed = map[string]bool{}
		for _, f := range strings.Fields(diff) {
			changed[f] = true
		}
	}
	dir, err := os.MkdirTemp("", "bucketlease-mutate-")
	if err != nil {
		return err
	}
	if keep {
		fmt.Println("scratch copy:", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	if err := extract(sha, dir); err != nil {
		return err
	}
	fmt.Printf("mutating %s (%d mutants) in %s\n", sha[:12], len(mutants), dir)
	if slowLeft > 0 {
		fmt.Printf("(%d mutants of the slow tier left out: -slow runs them)\n", slowLeft)
	}

	baseline := map[string]time.Duration{} // test command -> unmutated time; absent if it fails
	tried := map[string]bool{}
	var results []result
	for _, m := range mutants {
		r := result{m: m}
		a, err := mutate.Apply(dir, m)
		var stale *mutate.StaleError
		switch {
		case errors.As(err, &stale):
			r.status, r.detail = "stale", stale.Error()
		case err != nil:
			return err
		case changed != nil && !touches(a.Files, changed):
			if err := a.Restore(); err != nil {
				return err
			}
			continue // outside the change: not run, not reported
		case check:
			r.status, r.where = "applies", a.Where
			if err := a.Restore(); err != nil {
				return err
			}
		default:
			r.where = a.Where
			key := strings.Join(testArgs(m, 0), " ")
			if !tried[key] {
				// Run the tests once unmutated, to time them and to be
				// sure that a failure is the mutant's.
				tried[key] = true
				if err := a.Restore(); err != nil {
					return err
				}
				status, detail, took := goTest(dir, m, 20*time.Minute)
				if status != "survived" {
					// Once more: on a loaded machine a process test
					// can miss a bound once.
					fmt.Printf("baseline   %-28s its tests failed unmutated (%s: %s); once more\n", m.ID, status, detail)
					status, detail, took = goTest(dir, m, 20*time.Minute)
				}
				if status == "survived" {
					baseline[key] = took
				} else {
					fmt.Printf("baseline   %-28s its tests fail unmutated (%s): %s\n", m.ID, status, detail)
				}
				if a, err = mutate.Apply(dir, m); err != nil {
					return err
				}
			}
			if base, ok := baseline[key]; !ok {
				r.status, r.detail = "skipped", "its tests fail without the mutant"
			} else {
				limit := timeout
				if limit == 0 {
					limit = 3*base + time.Minute
				}
				r.status, r.detail, r.took = goTest(dir, m, limit)
			}
			if err := a.Restore(); err != nil {
				return err
			}
		}
		fmt.Printf("%-10s %-28s %-32s %s%s\n", r.status, m.ID, r.where, m.What, suffix(r))
		results = append(results, r)
	}
	report(sha, results)
	return nil
}

// touches reports whether any of files is in changed.
func touches(files []string, changed map[string]bool) bool {
	for _, f := range files {
		if changed[f] {
			return true
		}
	}
	return false
}

func suffix(r result) string {
	s := ""
	if r.took > 0 {
		s = fmt.Sprintf(" (%.0fs)", r.took.Seconds())
	}
	if r.detail != "" {
		s += " [" + r.detail + "]"
	}
	return s
}

// report prints the score and the mutants that need attention.
func report(sha string, results []result) {
	by := map[string][]result{}
	for _, r := range results {
		by[r.status] = append(by[r.status], r)
	}
	caught := len(by["killed"]) + len(by["timeout"])
	judged := caught + len(by["survived"])
	fmt.Println()
	if len(by["applies"]) > 0 {
		fmt.Printf("%d of %d mutants apply to %s\n", len(by["applies"]), len(results), sha[:12])
	}
	if judged > 0 {
		fmt.Printf("score: %d of %d killed (%.1f %%) on %s: %d killed, %d by a timeout, %d survived\n",
			caught, judged, 100*float64(caught)/float64(judged), sha[:12], len(by["killed"]), len(by["timeout"]), len(by["survived"]))
	}
	for _, s := range []string{"survived", "timeout", "stale", "broken", "skipped"} {
		if len(by[s]) == 0 {
			continue
		}
		fmt.Printf("%s (%d):\n", s, len(by[s]))
		for _, r := range by[s] {
			fmt.Printf("  %-28s %s: %s%s\n", r.m.ID, r.m.File, r.m.What, suffix(r))
		}
	}
}

// testArgs is the go test command line for m's tests.
func testArgs(m mutate.Mutant, timeout time.Duration) []string {
	args := []string{"test", "-count=1", "-vet=off"}
	if timeout > 0 {
		args = append(args, "-timeout", timeout.String())
	}
	if m.Run != "" {
		args = append(args, "-run", m.Run)
	}
	return append(args, m.Pkgs...)
}

var failLine = regexp.MustCompile(`(?m)^\s*--- FAIL: (\S+)`)

// goTest runs m's tests in dir within limit and classifies the outcome.
func goTest(dir string, m mutate.Mutant, limit time.Duration) (status, detail string, took time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), limit+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", testArgs(m, limit)...)
	cmd.Dir = dir
	if m.Slow {
		cmd.Env = append(os.Environ(), "BUCKETLEASE_REQUIRE_EMULATORS=1")
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	setGroup(cmd)
	cmd.WaitDelay = 10 * time.Second
	start := time.Now()
	err := cmd.Run()
	took = time.Since(start)
	text := out.String()
	var failed []string
	for _, f := range failLine.FindAllStringSubmatch(text, -1) {
		if !strings.Contains(f[1], "/") && len(failed) < 3 {
			failed = append(failed, f[1])
		}
	}
	hung := ctx.Err() != nil || strings.Contains(text, "panic: test timed out")
	switch {
	case err == nil:
		return "survived", "", took
	case strings.Contains(text, "[build failed]") || strings.Contains(text, "[setup failed]"):
		return "broken", firstLine(text), took
	case hung && len(failed) == 0:
		// Killed only by a hang: say which tests were still running.
		detail := "after " + limit.String()
		if running := hanging(text); running != "" {
			detail += " in " + running
		}
		return "timeout", detail, took
	case len(failed) == 0:
		return "killed", firstLine(text), took
	case hung:
		return "killed", "by " + strings.Join(failed, ", ") + ", and then a hang in " + hanging(text), took
	}
	return "killed", "by " + strings.Join(failed, ", "), took
}

// hanging names the tests that go test's timeout panic says were running.
func hanging(text string) string {
	_, after, ok := strings.Cut(text, "running tests:\n")
	if !ok {
		return ""
	}
	var names []string
	for _, l := range strings.Split(after, "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || !strings.HasPrefix(f[0], "Test") || len(names) == 3 {
			break
		}
		names = append(names, f[0])
	}
	return strings.Join(names, ", ")
}

func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			if len(l) > 120 {
				l = l[:120] + "…"
			}
			return l
		}
	}
	return ""
}

// extract writes the tree of commit sha into dir.
func extract(sha, dir string) error {
	cmd := exec.Command("git", "archive", "--format=tar", sha)
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	tr := tar.NewReader(pipe)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		path := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(path, filepath.Clean(dir)+string(os.PathSeparator)) {
			continue
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(path, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode)&0o777)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := os.Symlink(h.Linkname, path); err != nil {
				return err
			}
		}
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("git archive %s: %v: %s", sha, err, stderr.String())
	}
	return nil
}

func output(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, ee.Stderr)
		}
		return "", err
	}
	return string(out), nil
}
