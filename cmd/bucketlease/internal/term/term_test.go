//go:build unix

package term

import (
	"os/exec"
	"strings"
	"testing"
)

func TestTerminalSafe(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, ü and 日本":     "plain text, ü and 日本",
		"two\nlines\tand a tab":    "two\nlines\tand a tab",
		"esc\x1b[2Jbell\a":         `esc\x1b[2Jbell\a`,
		"bidi \u202eexe.txt":       `bidi \u202eexe.txt`,
		"bad \xff byte, c1 \u0085": `bad \xff byte, c1 \u0085`,
	} {
		if got := Safe(in); got != want {
			t.Errorf("Safe(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestShellQuotePastes: what ShellQuote makes of a word with characters
// that must not reach a terminal raw is one shell word that bash reads
// back as the same bytes.
func TestShellQuotePastes(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash to paste into")
	}
	for _, in := range []string{"file:///b/a\x1b[31mred", "file:///b/new\nline", "it's \u202e\xff\\x", "plain/url"} {
		q := ShellQuote(in)
		if strings.ContainsFunc(q, unsafeRune) || strings.ContainsAny(q, "\n\t") {
			t.Errorf("ShellQuote(%q) = %q: raw", in, q)
		}
		out, err := exec.Command(bash, "-c", "printf %s "+q).Output()
		if err != nil || string(out) != in {
			t.Errorf("bash read ShellQuote(%q) = %s back as %q (%v)", in, q, out, err)
		}
	}
}
