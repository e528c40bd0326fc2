//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/report"
	"github.com/mushroomdb/bucketlease/drivertest"
)

// TestHostileRecordNeverReachesTheTerminal: a LEASE record whose instance
// id holds an escape sequence (one that retitles the terminal), a bell and
// a bidi override, written by whoever can write to the bucket, is not a
// lease record (admin.DecodeRecord refuses it): show, list and hold read it
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

// TestProbeReportEscapesTheServicesWords: a check's "got:" line quotes the
// service's own error text, which a hostile endpoint chooses.
func TestProbeReportEscapesTheServicesWords(t *testing.T) {
	var out strings.Builder
	report.PrintProbe(&out, &drivertest.Report{Results: []drivertest.Result{{Name: "get-missing", Got: "500: \x1b]0;pwned\a"}}}, report.Leftovers{})
	if strings.ContainsAny(out.String(), "\x1b\a") || !strings.Contains(out.String(), `got: 500: \x1b]0;pwned\a`) {
		t.Errorf("the report prints the service's text raw:\n%q", out.String())
	}
}
