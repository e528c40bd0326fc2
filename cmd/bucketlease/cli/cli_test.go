package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/exitcode"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/report"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/term"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/drivertest"
	"github.com/mushroomdb/bucketlease/internal/location"
)

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"--help"}} {
		out, _, code := runInProcess(t, args...)
		if code != 0 {
			t.Errorf("%v: exit %d", args, code)
		}
		for _, want := range []string{"demo", "hold", "show", "probe", "break", "Exit codes:", "124", "file:///", "s3://", "AWS_ACCESS_KEY_ID", "azblob://", "AZURE_STORAGE_CONNECTION_STRING", "gs://", "minio://", "r2://"} {
			if !strings.Contains(out, want) {
				t.Errorf("%v: the help lacks %q:\n%s", args, want, out)
			}
		}
	}
	for _, c := range commands() {
		for _, args := range [][]string{{"help", c.name}, {c.name, "-h"}, {c.name, "--help"}} {
			out, errOut, code := runInProcess(t, args...)
			if code != 0 || !strings.Contains(out, "Usage: bucketlease "+c.name) || errOut != "" {
				t.Errorf("%v: exit %d, stdout:\n%s\nstderr:\n%s", args, code, out, errOut)
			}
			if c.name != "demo" && !strings.Contains(out, "Examples:") {
				t.Errorf("%v: no examples:\n%s", args, out)
			}
		}
	}
	out, _, _ := runInProcess(t, "help", "hold")
	for _, want := range []string{"-ttl", "-instance-id", "-wait", "-grace", "-json", "-log-level", "-verbose", "124"} {
		if !strings.Contains(out, want) {
			t.Errorf("hold's help lacks %q", want)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{nil, "Usage: bucketlease COMMAND"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"; the commands are demo, hold, put, get, verify, show, list, probe, break, prune, version`},
		{[]string{"show"}, "show needs a URL"},
		{[]string{"show", "mem://a/p", "mem://b/p"}, "show takes one URL"},
		{[]string{"show", "mem://a/p", "--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"break", "mem://a/p"}, "break needs --version"},
		{[]string{"hold"}, "hold needs one URL"},
		{[]string{"hold", "mem://a/p", "--ttl", "1500ms"}, "whole number of seconds"},
		{[]string{"hold", "file:///nonexistent/p", "--log-level", "loud"}, "--log-level"},
		{[]string{"hold", "mem://a/p", "--ttl", "0"}, "--ttl 0s: the TTL is a whole number of seconds from 1s to 1h"},
		{[]string{"hold", "mem://a/p", "--ttl", "2h"}, "--ttl 2h0m0s: the TTL is a whole number of seconds from 1s to 1h"},
		{[]string{"hold", "mem://a/p", "--wait-timeout", "5s"}, "--wait-timeout works only with --wait"},
		{[]string{"hold", "mem://a/p", "--grace", "-1s"}, "--grace -1s: it cannot be negative"},
		{[]string{"hold", "file:///nonexistent/p", "--instance-id", "bucketlease-break"}, "is the id bucketlease break writes"},
		{[]string{"hold", "file:///nonexistent/p", "--ttl", "30"}, `"30" has no unit: write 30s`},
		{[]string{"hold", "file:///nonexistent/p", "--events", "fd:x"}, "fd:N takes a file descriptor number"},
		{[]string{"version", "extra"}, "version takes no arguments"},
		{[]string{"help", "nothing"}, `no help for "nothing"`},
		{[]string{"show", "mem://a/p", "--", "ls"}, "takes no command after --"},
	}
	for _, c := range cases {
		_, errOut, code := runInProcess(t, c.args...)
		if code != exitcode.Usage || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: exit %d, stderr %q; want exit %d and %q", c.args, code, errOut, exitcode.Usage, c.want)
		}
	}
}

// TestFlagsAfterURL: flags may come before or after the URL.
func TestFlagsAfterURL(t *testing.T) {
	for _, args := range [][]string{{"show", "--json", "mem://flags/p"}, {"show", "mem://flags/p", "--json"}} {
		out, errOut, code := runInProcess(t, args...)
		if code != 0 || !strings.Contains(out, `"state": "free"`) {
			t.Errorf("%q: exit %d, %s %s", args, code, out, errOut)
		}
	}
}

func TestUnknownSchemeListsKnownOnes(t *testing.T) {
	_, errOut, code := runInProcess(t, "show", "ftp://host/p")
	if code != exitcode.Failure {
		t.Errorf("exit %d, want %d", code, exitcode.Failure)
	}
	for _, want := range []string{"unknown URL scheme", `"ftp"`, "azblob", "file", "gs", "mem", "minio", "r2", "s3"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("the error lacks %q: %s", want, errOut)
		}
	}
}

// TestNoCredentialPrinted: a secret in the URL never reaches the output.
func TestNoCredentialPrinted(t *testing.T) {
	for _, u := range []string{
		"ftp://user:hunter2secret@host/p",
		"s3://bucket/p?region=us-east-1&secret_key=hunter2secret",
		"file://user:hunter2secret@elsewhere/tmp/x",
		"mem://b/p?token=hunter2secret",
	} {
		for _, cmd := range []string{"show", "probe", "hold"} {
			out, errOut, code := runInProcess(t, cmd, u)
			if code == 0 {
				t.Errorf("%s %s: exit 0, want an error", cmd, u)
			}
			if strings.Contains(out+errOut, "hunter2secret") {
				t.Errorf("%s %s printed the secret:\n%s%s", cmd, u, out, errOut)
			}
		}
	}
}

func TestCredentialHint(t *testing.T) {
	denied := fmt.Errorf("s3: get db1/LEASE: %w: api error AccessDenied", driver.ErrPermission)
	if err := explain(mustParse(t, "s3://b/p"), denied); !strings.Contains(err.Error(), "AWS_ACCESS_KEY_ID") || !errors.Is(err, driver.ErrPermission) {
		t.Errorf("no hint, or the cause lost: %v", err)
	}
	if err := explain(mustParse(t, "minio://h:1/b/p"), denied); !strings.Contains(err.Error(), "MINIO_ROOT_USER") {
		t.Errorf("no hint: %v", err)
	}
	// An error is classified by what it wraps, not by its words.
	for _, e := range []error{errString("connection refused"), errString("invalid credentials in the text only")} {
		if err := explain(mustParse(t, "s3://b/p"), e); strings.Contains(err.Error(), "hint") {
			t.Errorf("a hint for %q: %v", e, err)
		}
	}
	if err := explain(mustParse(t, "file:///x"), denied); strings.Contains(err.Error(), "hint") {
		t.Errorf("a hint for a driver without credentials: %v", err)
	}
}

type errString string

// mustParse is rawURL parsed, as a command parses its URL.
func mustParse(t testing.TB, rawURL string) *location.Location {
	t.Helper()
	loc, err := location.Parse(rawURL)
	if err != nil {
		t.Fatalf("%s: %v", rawURL, err)
	}
	return loc
}

func (e errString) Error() string { return string(e) }

func TestDisplayURL(t *testing.T) {
	for raw, want := range map[string]string{
		"s3://b/p?endpoint=http://127.0.0.1:9000&path_style=true": "s3://b/p?endpoint=http://127.0.0.1:9000&path_style=true",
		"s3://b/p?secret_key=hunter2":                             "s3://b/p?secret_key=REDACTED",
		"file://u:hunter2@localhost/x":                            "file://REDACTED@localhost/x",
	} {
		if got := displayURL(raw); got != want {
			t.Errorf("displayURL(%q) = %q, want %q", raw, got, want)
		}
	}
}

// TestFlagSpelling: every command's help spells flags with two dashes, has
// one entry for -v and --verbose, and no line ends in a space.
func TestFlagSpelling(t *testing.T) {
	single := regexp.MustCompile(`(^|\s)-[a-z][a-z-]+`)
	for _, c := range commands() {
		out, _, _ := runInProcess(t, "help", c.name)
		for i, line := range strings.Split(out, "\n") {
			if strings.HasSuffix(line, " ") {
				t.Errorf("help %s, line %d ends in a space: %q", c.name, i+1, line)
			}
			if m := single.FindString(line); m != "" {
				t.Errorf("help %s, line %d spells a flag with one dash (%q): %q", c.name, i+1, strings.TrimSpace(m), line)
			}
		}
	}
	out, _, _ := runInProcess(t, "help", "hold")
	if n := strings.Count(out, "--verbose"); n != 1 || !strings.Contains(out, "-v, --verbose") {
		t.Errorf("hold's help has %d entries for --verbose, want one \"-v, --verbose\":\n%s", n, out)
	}
	main, _, _ := runInProcess(t, "help")
	for i, line := range strings.Split(main, "\n") {
		if strings.HasSuffix(line, " ") {
			t.Errorf("help, line %d ends in a space: %q", i+1, line)
		}
	}
	// The control: the checks see a single-dash flag and a trailing space.
	if single.FindString("  -ttl D") == "" || !strings.HasSuffix("Usage: bucketlease demo ", " ") {
		t.Error("the spelling checks would miss a single-dash flag")
	}
}

// TestVersionInProcess: version and --version print the module path.
func TestVersionInProcess(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, errOut, code := runInProcess(t, args...)
		if code != 0 || !strings.HasPrefix(out, "bucketlease ") || !strings.Contains(out, "module github.com/mushroomdb/bucketlease") {
			t.Errorf("%v: exit %d, %q %q", args, code, out, errOut)
		}
	}
}

// TestProbeCallsAnErroredCheckAnError: a check that could not complete is an
// error (exit 1), not "ignores preconditions" (exit 5).
func TestProbeCallsAnErroredCheckAnError(t *testing.T) {
	rep := &drivertest.Report{Results: []drivertest.Result{
		{Name: "put-if-absent-existing", Passed: true},
		{Name: "cas-counter", Errored: true, Got: "Get: unexpected EOF"},
		{Name: "race-if-absent", Got: "2 writers succeeded"},
	}}
	if got := erroredChecks(rep); len(got) != 1 || got[0] != "cas-counter" {
		t.Fatalf("erroredChecks = %v, want [cas-counter]", got)
	}
	if rep.Results[1].Status() != "inconclusive" || rep.Results[2].Status() != "FAIL" {
		t.Fatalf("result texts %q and %q", rep.Results[1].Status(), rep.Results[2].Status())
	}
}

// TestUsageErrorsInJSON: with --json anywhere before "--", a usage error
// (an unknown flag, a bad duration, even one before --json on the command
// line, which stops the flag package before it reads --json) is answered
// in JSON too, with exit 2: show, list, probe and break print their error
// object on stdout, hold its exit event on stderr.
func TestUsageErrorsInJSON(t *testing.T) {
	for _, args := range [][]string{
		{"show", "file:///nonexistent/p", "--bogus", "--json"},
		{"show", "--timeout", "5x", "file:///nonexistent/p", "--json"},
		{"list", "file:///nonexistent/p", "--json", "--max-keys", "x"},
		{"probe", "--timeout=2", "file:///nonexistent/p", "-json"},
		{"break", "file:///nonexistent/p", "--bogus", "--json=true"},
	} {
		out, errOut, code := runInProcess(t, args...)
		var got errorJSON
		if err := json.Unmarshal([]byte(out), &got); err != nil || code != exitcode.Usage || got.Exit != exitcode.Usage || got.Class != "usage" ||
			got.Command != args[0] || !strings.Contains(got.Message, "flag") || !strings.Contains(errOut, got.Message) {
			t.Errorf("%q: exit %d, stdout %q (%v), stderr %q; want one usage object, exit 2", args, code, out, err, errOut)
		}
	}
	for _, args := range [][]string{
		{"hold", "file:///nonexistent/p", "--ttl", "5x", "--json"},
		{"hold", "file:///nonexistent/p", "--bogus", "--json", "--", "echo", "RAN"},
		{"hold", "file:///nonexistent/p", "--json", "--ttl", "0"},
		{"hold", "file:///nonexistent/p", "--json", "--log-level", "loud"},
	} {
		out, errOut, code := runInProcess(t, args...)
		var ev report.Record
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		if err := json.Unmarshal([]byte(lines[0]), &ev); err != nil || code != exitcode.Usage || ev.Event != "exit" || ev.Status == nil ||
			*ev.Status != exitcode.Usage || ev.Detail != "usage" || ev.Error == "" || out != "" || strings.Contains(errOut, "RAN") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q (%v); want an exit event with status 2 first", args, code, out, errOut, err)
		}
		if n := strings.Count(errOut, `"event":"exit"`); n != 1 {
			t.Errorf("%q: %d exit events:\n%s", args, n, errOut)
		}
	}
	// The control: without --json (or with --json=false, or after --),
	// no JSON.
	for _, args := range [][]string{
		{"show", "file:///nonexistent/p", "--bogus"},
		{"show", "file:///nonexistent/p", "--bogus", "--json=false"},
		{"hold", "file:///nonexistent/p", "--bogus", "--", "echo", "--json"},
	} {
		out, errOut, code := runInProcess(t, args...)
		if code != exitcode.Usage || out != "" || strings.Contains(errOut, "{") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want text only", args, code, out, errOut)
		}
	}
}

// TestProbeReportFits100Columns: probe's report for people keeps to 100
// columns, whatever its checks say (long expectations, an error holding a
// key longer than a line), and loses no word of them; --json has every
// field whole.
func TestProbeReportFits100Columns(t *testing.T) {
	longKey := "bucketlease-probe/2beb495acede/lease-lost-reply/" + strings.Repeat("k", 150) + "/LEASE.acquire-probe-3bb2a119e63ba974"
	rep := &drivertest.Report{
		Declared: driver.Capabilities{Exclusion: driver.Conditional, ConditionalDelete: true},
		Observed: driver.Capabilities{Exclusion: driver.NoExclusion, ConditionalDelete: true},
		Results: []drivertest.Result{
			{Name: "put-if-absent-existing", Passed: true, Got: "as expected",
				Expect: "IfAbsent on an existing key returns ErrPrecondition and leaves the object unchanged, " + strings.Repeat("and says so at length ", 12)},
			{Name: "lease-lost-reply", Expect: "an acquire whose reply was lost is recognised as our own on the next attempt",
				Got: "an acquire with the first reply lost: acquire: write the probe key " + longKey + ": faulty: reply lost after the request was applied"},
			{Name: "delete-condition-refused", Skipped: true, Expect: "without a conditional Delete, Delete IfMatch returns ErrUnsupported",
				Got: "not applicable: the driver declares exclusion conditional, conditional delete true"},
			{Name: "cas-counter", Errored: true, Expect: "5 workers", Got: "Get: unexpected EOF"},
		},
	}
	var b strings.Builder
	report.PrintProbe(&b, rep, report.Leftovers{})
	out := b.String()
	for i, l := range strings.Split(out, "\n") {
		if n := len([]rune(l)); n > report.ProbeWidth {
			t.Errorf("line %d is %d columns wide: %q", i+1, n, l)
		}
	}
	// Every word is there: the text with line breaks and indentation taken
	// out holds each expectation, each Got that is not "as expected", and
	// the long key, in one piece.
	joined := strings.Join(strings.Fields(strings.ReplaceAll(out, "\n         ", "")), " ")
	flat := strings.Join(strings.Fields(out), " ")
	for _, r := range rep.Results {
		if !strings.Contains(flat, r.Name+" "+r.Status()) || !strings.Contains(flat, term.OneLine(r.Expect)) {
			t.Errorf("the report lacks %s's row or expectation:\n%s", r.Name, out)
		}
	}
	if !strings.Contains(joined, longKey) || !strings.Contains(flat, "got: not applicable") || strings.Contains(flat, "got: as expected") {
		t.Errorf("the report lost a word of what the checks got:\n%s", out)
	}
	if !strings.Contains(out, "verdict:  FAIL, the service ignores write preconditions") {
		t.Errorf("no verdict:\n%s", out)
	}
	j := report.ProbeJSON("file:///x", rep, report.Leftovers{})
	if len(j.Results) != len(rep.Results) || j.Results[1].Got != rep.Results[1].Got || j.Results[0].Expect != rep.Results[0].Expect {
		t.Errorf("--json lost a field: %+v", j.Results)
	}
	// The control: the old table's lines were wider.
	if got := term.Wrap("verdict:  "+strings.Repeat("word ", 40), report.ProbeWidth, "          "); !strings.HasPrefix(got, "verdict:  word") || strings.Count(got, "\n") < 1 {
		t.Errorf("wrapText kept a long line whole or lost its spacing: %q", got)
	}
}

// TestDemoRunsQuickly: the README's first command finishes at once.
func TestDemoRunsQuickly(t *testing.T) {
	start := time.Now()
	out, errOut, code := runInProcess(t, "demo")
	if code != 0 || errOut != "" || !strings.Contains(out, "TOOK OVER") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the demo took %v", d)
	}
}
