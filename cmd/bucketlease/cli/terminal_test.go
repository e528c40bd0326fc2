//go:build unix

package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mushroomdb/bucketlease/drivertest"
)

func TestTerminalSafe(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, ü and 日本":     "plain text, ü and 日本",
		"two\nlines\tand a tab":    "two\nlines\tand a tab",
		"esc\x1b[2Jbell\a":         `esc\x1b[2Jbell\a`,
		"bidi \u202eexe.txt":       `bidi \u202eexe.txt`,
		"bad \xff byte, c1 \u0085": `bad \xff byte, c1 \u0085`,
	} {
		if got := terminalSafe(in); got != want {
			t.Errorf("terminalSafe(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestShellQuotePastes: what shellQuote makes of a word with characters
// that must not reach a terminal raw is one shell word that bash reads
// back as the same bytes.
func TestShellQuotePastes(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash to paste into")
	}
	for _, in := range []string{"file:///b/a\x1b[31mred", "file:///b/new\nline", "it's \u202e\xff\\x", "plain/url"} {
		q := shellQuote(in)
		if strings.ContainsFunc(q, unsafeRune) || strings.ContainsAny(q, "\n\t") {
			t.Errorf("shellQuote(%q) = %q: raw", in, q)
		}
		out, err := exec.Command(bash, "-c", "printf %s "+q).Output()
		if err != nil || string(out) != in {
			t.Errorf("bash read shellQuote(%q) = %s back as %q (%v)", in, q, out, err)
		}
	}
}

// TestHostileRecordNeverReachesTheTerminal: a LEASE record whose instance
// id holds an escape sequence (one that retitles the terminal), a bell and
// a bidi override, written by whoever can write to the bucket, is not a
// lease record (lease.DecodeRecord refuses it): show, list and hold read it
// as suspect, and name its id, where they do, escaped, never raw.
func TestHostileRecordNeverReachesTheTerminal(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "db")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	record := `{"instance_id":"x\u001b]0;pwned\u0007y\u202etxt.exe","acquired_at":"2026-12-06T18:00:00Z","renewed_at":"2999-01-01T00:00:00Z","ttl_s":60,"epoch":3}`
	if err := os.WriteFile(filepath.Join(dir, "LEASE"), []byte(record), 0o644); err != nil {
		t.Fatal(err)
	}
	const escaped = `x\x1b]0;pwned\ay\u202etxt.exe`
	for _, args := range [][]string{
		{"show", "file://" + dir},
		{"list", "file://" + root},
		{"hold", "file://" + dir, "--", "true"},
	} {
		stdout, stderr, code := runCLI(t, nil, args...)
		all := stdout + stderr
		if strings.ContainsAny(all, "\x1b\a\u202e") {
			t.Errorf("%s (exit %d) printed the record's instance id raw:\n%q", args[0], code, all)
		}
		if !strings.Contains(all, "suspect") {
			t.Errorf("%s (exit %d) does not read the record as suspect:\n%s", args[0], code, all)
		}
		if args[0] != "list" && !strings.Contains(all, escaped) {
			t.Errorf("%s (exit %d) does not name the record's id as %s:\n%s", args[0], code, escaped, all)
		}
	}
}

// TestHolderNameEscapes: a holder's id is printed escaped, whatever the
// lease lets through.
func TestHolderNameEscapes(t *testing.T) {
	if got, want := holderName("x\x1b]0;pwned\ay\u202etxt.exe"), `x\x1b]0;pwned\ay\u202etxt.exe`; got != want {
		t.Errorf("holderName = %q, want %q", got, want)
	}
}

// TestProbeReportEscapesTheServicesWords: a check's "got:" line quotes the
// service's own error text, which a hostile endpoint chooses.
func TestProbeReportEscapesTheServicesWords(t *testing.T) {
	var out strings.Builder
	printReport(&out, &drivertest.Report{Results: []drivertest.Result{{Name: "get-missing", Got: "500: \x1b]0;pwned\a"}}})
	if strings.ContainsAny(out.String(), "\x1b\a") || !strings.Contains(out.String(), `got: 500: \x1b]0;pwned\a`) {
		t.Errorf("the report prints the service's text raw:\n%q", out.String())
	}
}
