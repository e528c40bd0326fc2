//go:build linux

package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/exitcode"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/report"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// jsonObject decodes out as exactly one JSON object.
func jsonObject(t *testing.T, what, out string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("%s: stdout %q is not a JSON object: %v", what, out, err)
	}
	if dec.More() {
		t.Fatalf("%s: stdout holds more than one JSON object: %q", what, out)
	}
	return m
}

// TestLeaseThatIsADirectory: a LEASE that is a directory, empty or
// holding files (which the file driver reads as keys LEASE/… of their own,
// so that the lease looked free), is reported by show, break, hold, put
// and probe as what it is, naming the path, with the fix (remove or rename
// it), never as a free lease; hold --wait does not retry it.
func TestLeaseThatIsADirectory(t *testing.T) {
	for _, inside := range [][]string{nil, {"x", "sub/y"}} {
		t.Run(fmt.Sprintf("holding %d files", len(inside)), func(t *testing.T) { leaseThatIsADirectory(t, inside) })
	}
}

func leaseThatIsADirectory(t *testing.T, inside []string) {
	u, dir := fileURL(t)
	if err := os.Mkdir(filepath.Join(dir, "LEASE"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range inside {
		p := filepath.Join(dir, "LEASE", f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("not a lease\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	says := func(what, out, errOut string, code int) {
		t.Helper()
		if code != exitcode.Failure || !strings.Contains(errOut, filepath.Join(dir, "LEASE")) || !strings.Contains(errOut, "is a directory") ||
			!strings.Contains(errOut, "remove or rename") || strings.Contains(out, "free") || strings.Contains(out, "nothing to break") ||
			strings.Contains(out+errOut, "verdict") || strings.Contains(out+errOut, "RAN") {
			t.Errorf("%s on a LEASE that is a directory: exit %d, stdout %q, stderr %q; want exit 1 naming it a directory to remove or rename", what, code, out, errOut)
		}
	}
	out, errOut, code := runCLI(t, nil, "show", u)
	says("show", out, errOut, code)
	out, errOut, code = runCLI(t, nil, "break", u, "--version", "0123456789abcdef0123456789abcdef")
	says("break", out, errOut, code)
	out, errOut, code = runCLI(t, nil, "hold", u, "--ttl", "3s", "--", "echo", "RAN")
	says("hold", out, errOut, code)
	out, errOut, code = runCLI(t, nil, "probe", u)
	says("probe", out, errOut, code)
	out, errOut, code = runCLI(t, nil, "put", u, "dumps/a", "/dev/null")
	says("put", out, errOut, code)
	// --wait: a permanent error, not retried (the wait-timeout is only a
	// bound for a broken build, far above what a prompt exit takes).
	out, errOut, code = runCLI(t, nil, "hold", u, "--ttl", "3s", "--wait", "--wait-timeout", "10m", "--", "true")
	says("hold --wait", out, errOut, code)
	if strings.Contains(errOut, "retrying") || strings.Contains(errOut, "waiting") {
		t.Errorf("hold --wait retried a permanent error:\n%s", errOut)
	}
	for _, cmd := range []string{"show", "probe"} {
		out, _, code = runCLI(t, nil, cmd, u, "--json")
		if m := jsonObject(t, cmd+" --json", out); code != exitcode.Failure || m["exit"] != float64(exitcode.Failure) || m["class"] != "invalid-key" ||
			!strings.Contains(fmt.Sprint(m["message"]), "remove or rename") {
			t.Errorf("%s --json: exit %d, %v", cmd, code, m)
		}
	}
	if st, err := os.Stat(filepath.Join(dir, "LEASE")); err != nil || !st.IsDir() {
		t.Errorf("the directory was changed: %v", err)
	}
	for _, f := range inside {
		if _, err := os.Stat(filepath.Join(dir, "LEASE", f)); err != nil {
			t.Errorf("a file inside it was changed: %v", err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".bucketlease")); err == nil {
		t.Error("the driver was opened: .bucketlease was created")
	}
}

// TestList: list finds every lease object under a prefix, with its own
// URL, state and holder, in text and JSON; --max-keys stops it and says so.
func TestList(t *testing.T) {
	u, root := fileURL(t)
	now, old := time.Now(), time.Now().Add(-time.Hour)
	for _, d := range []string{"db1", "db2/wal"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeRecord(t, filepath.Join(root, "db1"), admin.Record{InstanceID: "host-a", AcquiredAt: now, RenewedAt: now, TTLSeconds: 600})
	vb := writeRecord(t, filepath.Join(root, "db2", "wal"), admin.Record{InstanceID: "host-b", AcquiredAt: old, RenewedAt: old, TTLSeconds: 30})
	if err := os.WriteFile(filepath.Join(root, "db2", "data"), []byte("not a lease"), 0o644); err != nil {
		t.Fatal(err)
	}

	out, errOut, code := runCLI(t, nil, "list", u)
	if code != 0 {
		t.Fatalf("list: exit %d: %s", code, errOut)
	}
	for _, want := range []string{u + "/db1  ", "fresh", "host-a", u + "/db2/wal", "stale", "host-b", string(vb)} {
		if !strings.Contains(out, want) {
			t.Errorf("list lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "data") || strings.Contains(out, "Stopped after") {
		t.Errorf("list:\n%s", out)
	}

	out, errOut, code = runCLI(t, nil, "list", u, "--json")
	if code != 0 {
		t.Fatalf("list --json: exit %d: %s", code, errOut)
	}
	var res report.List
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("list --json: %v\n%s", err, out)
	}
	if res.Truncated || len(res.Leases) != 2 || res.Leases[0].Prefix != "db1" || res.Leases[0].State != "fresh" ||
		res.Leases[1].URL != u+"/db2/wal" || res.Leases[1].Holder != "host-b" || res.Leases[1].Version != string(vb) {
		t.Errorf("list --json: %+v", res)
	}
	// The URL it prints is the one show takes.
	if s := showJSONOf(t, res.Leases[1].URL); s.Version != string(vb) || s.State != "stale" {
		t.Errorf("show of the listed URL: %+v", s)
	}

	out, _, code = runCLI(t, nil, "list", u, "--max-keys", "1")
	if code != 0 || !strings.Contains(out, "Stopped after 1 keys") {
		t.Errorf("list --max-keys 1: exit %d:\n%s", code, out)
	}
	out, _, _ = runCLI(t, nil, "list", u, "--max-keys", "1", "--json")
	if m := jsonObject(t, "list --max-keys 1 --json", out); m["truncated"] != true {
		t.Errorf("list --max-keys 1 --json: %v", m)
	}
	out, _, code = runCLI(t, nil, "list", "--json", u+"/nope")
	if m := jsonObject(t, "list of a missing directory", out); code != exitcode.Failure || m["exit"] != float64(exitcode.Failure) || !strings.Contains(fmt.Sprint(m["message"]), "no such directory") {
		t.Errorf("list of a missing directory: exit %d, %v", code, m)
	}
}

// TestJSONForErrorsAndRefusals: with --json, show,
// break and probe print their failures and refusals as one JSON object
// on stdout, with the exit code and the class.
func TestJSONForErrorsAndRefusals(t *testing.T) {
	u, dir := fileURL(t)
	now := time.Now()
	v := writeRecord(t, dir, admin.Record{InstanceID: "host-a", AcquiredAt: now, RenewedAt: now, TTLSeconds: 600})
	for _, c := range []struct {
		args  []string
		code  int
		class string
	}{
		{[]string{"show", "--json", u + "/nope"}, exitcode.Failure, "error"},
		{[]string{"show", "--json", u, "extra"}, exitcode.Usage, "usage"},
		{[]string{"break", "--json", u, "--version", "0123456789abcdef0123456789abcdef"}, exitcode.Refused, "precondition"},
		{[]string{"break", "--json", u, "--version", string(v)}, exitcode.Refused, "held"},
		{[]string{"probe", "--json", "mem://x"}, exitcode.Usage, "usage"},
		{[]string{"probe", "--json", "nosuch://x"}, exitcode.Failure, "error"},
	} {
		out, errOut, code := runCLI(t, nil, c.args...)
		m := jsonObject(t, strings.Join(c.args, " "), out)
		if code != c.code || m["exit"] != float64(c.code) || m["class"] != c.class || m["command"] != c.args[0] ||
			m["message"] == "" || !strings.Contains(errOut, fmt.Sprint(m["message"])) {
			t.Errorf("%v: exit %d, %v, stderr %q; want exit %d, class %s", c.args, code, m, errOut, c.code, c.class)
		}
	}
	out, _, code := runCLI(t, nil, "break", "--json", u, "--version", string(v), "--force")
	if m := jsonObject(t, "break --json --force", out); code != 0 || m["exit"] != float64(0) || m["class"] != "ok" || !strings.Contains(fmt.Sprint(m["message"]), "Broke the lease") {
		t.Errorf("break --json --force: exit %d, %v", code, m)
	}
}

// TestHoldWSeconds: hold -w SECS, as flock -w, waits at most SECS seconds
// and then exits 3, or -E's code; -w needs a number of seconds.
func TestHoldWSeconds(t *testing.T) {
	u, _ := fileURL(t)
	a := start(t, nil, "hold", u, "--ttl", "30s", "--instance-id", "alpha")
	a.waitFor(`acquired`)
	_, errOut, code := runCLI(t, nil, "hold", u, "-w", "0.5", "--instance-id", "beta", "--", "true")
	if code != exitcode.Held || !strings.Contains(errOut, "--wait-timeout passed") || !strings.Contains(errOut, "alpha") {
		t.Errorf("-w 0.5: exit %d, stderr %q", code, errOut)
	}
	if _, _, code := runCLI(t, nil, "hold", u, "-w", "0.5", "-E", "7", "--instance-id", "beta", "--", "true"); code != 7 {
		t.Errorf("-w 0.5 -E 7: exit %d, want 7", code)
	}
	for _, bad := range []string{"0", "-1", "2s", "x"} {
		if _, errOut, code := runCLI(t, nil, "hold", u, "-w", bad, "--", "true"); code != exitcode.Usage || !strings.Contains(errOut, "-w takes a number of seconds") {
			t.Errorf("-w %s: exit %d, stderr %q", bad, code, errOut)
		}
	}
}

// TestBreakAsksOnATerminal: on a terminal, break shows the lease and asks;
// only "yes" breaks it, anything else exits 4 and writes nothing; --yes
// does not ask. Without a terminal (every other break test) it never asks.
func TestBreakAsksOnATerminal(t *testing.T) {
	u, dir := fileURL(t)
	old := time.Now().Add(-time.Hour)
	v := writeRecord(t, dir, admin.Record{InstanceID: "dead-host", AcquiredAt: old, RenewedAt: old, TTLSeconds: 30})
	tm := newTerminal(t)
	tm.send(fmt.Sprintf("%s break %s --version %s; echo BREAK-EXIT=$?\n", binary, u, v))
	tm.waitFor(`Only 'yes' breaks it`)
	if !strings.Contains(tm.output(), "dead-host") {
		t.Errorf("break asked before it showed the lease:\n%s", tm.output())
	}
	tm.send("no\n")
	if m := tm.waitFor(`BREAK-EXIT=\d+`); m != fmt.Sprintf("BREAK-EXIT=%d", exitcode.Refused) {
		t.Errorf("answer no: %s, want %d", m, exitcode.Refused)
	}
	if s := showJSONOf(t, u); s.Version != string(v) || s.State != "stale" {
		t.Errorf("a break answered no changed the lease: %+v", s)
	}
	tm.send(fmt.Sprintf("%s break %s --version %s; echo BREAK2-EXIT=$?\n", binary, u, v))
	for end := time.Now().Add(eventTimeout); strings.Count(tm.output(), "Only 'yes' breaks it") < 2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the second break did not ask within %v", eventTimeout)
		}
	}
	tm.send("yes\n")
	if m := tm.waitFor(`BREAK2-EXIT=\d+`); m != "BREAK2-EXIT=0" {
		t.Errorf("answer yes: %s, want 0", m)
	}
	if s := showJSONOf(t, u); s.State != "released" || s.Holder != admin.BreakerID {
		t.Errorf("after yes: %+v", s)
	}
	v = writeRecord(t, dir, admin.Record{InstanceID: "dead-host", AcquiredAt: old, RenewedAt: old, TTLSeconds: 30})
	tm.send(fmt.Sprintf("%s break %s --version %s --yes; echo BREAK3-EXIT=$?\n", binary, u, v))
	if m := tm.waitFor(`BREAK3-EXIT=\d+`); m != "BREAK3-EXIT=0" {
		t.Errorf("--yes: %s, want 0", m)
	}
	if after := tm.output()[strings.Index(tm.output(), "BREAK2-EXIT=0"):]; strings.Contains(after, "Only 'yes'") {
		t.Errorf("--yes asked:\n%s", after)
	}
}
