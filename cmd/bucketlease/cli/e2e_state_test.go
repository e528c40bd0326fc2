//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/exitcode"
)

// TestHoldRestartAdoptsItsOwnLease: a hold killed by SIGKILL (as the OOM
// killer or a deploy would) and started again with the same --instance-id
// and state directory takes back the lease it left at once; one that is
// only stopped (SIGSTOP) keeps its lock, so its successor waits; without a
// state directory the restart waits for the lease to go stale.
func TestHoldRestartAdoptsItsOwnLease(t *testing.T) {
	u, _ := fileURL(t)
	state := t.TempDir()
	holdArgs := func(extra ...string) []string {
		return append([]string{"hold", u, "--ttl", "30s", "--instance-id", "alpha"}, extra...)
	}
	a := start(t, nil, holdArgs("--state-dir", state, "--", "sleep", "120")...)
	a.waitFor(`command-started`)
	a.signal(syscall.SIGKILL)
	a.wait()

	// Without its state directory, one look cannot tell its dead
	// predecessor's record from another live process's with the same id:
	// exit 6, saying both, until the record goes stale.
	if _, errOut, code := runCLI(t, nil, holdArgs("--state-dir", "none", "--", "true")...); code != exitcode.InstanceInUse || !strings.Contains(errOut, "previous process died") {
		t.Fatalf("a restart without a state directory: exit %d, want %d naming both causes: %s", code, exitcode.InstanceInUse, errOut)
	}
	out, errOut, code := runCLI(t, nil, holdArgs("--state-dir", state, "--", "echo", "RAN")...)
	if code != 0 || strings.TrimSpace(out) != "RAN" || !strings.Contains(errOut, "adopted") {
		t.Fatalf("the restart with its state directory: exit %d, stdout %q, stderr %q; want it to adopt its lease at once", code, out, errOut)
	}

	b := start(t, nil, holdArgs("--state-dir", state, "--", "sleep", "120")...)
	b.waitFor(`command-started`)
	b.signal(syscall.SIGSTOP)
	if _, errOut, code := runCLI(t, nil, holdArgs("--state-dir", state, "--", "true")...); code != exitcode.InstanceInUse {
		t.Fatalf("a restart while its predecessor is stopped: exit %d, want %d: %s", code, exitcode.InstanceInUse, errOut)
	}
	b.signal(syscall.SIGKILL)
	b.wait()
	if out, errOut, code := runCLI(t, nil, holdArgs("--state-dir", state, "--", "echo", "RAN")...); code != 0 || strings.TrimSpace(out) != "RAN" {
		t.Fatalf("once the stopped predecessor was killed: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestShowSaysWhoHolds: hold writes which tool, pid, host and user hold the
// lease; show prints them, and show --json carries them.
func TestShowSaysWhoHolds(t *testing.T) {
	u, _ := fileURL(t)
	a := start(t, nil, "hold", u, "--ttl", "30s", "--", "sleep", "120")
	a.waitFor(`command-started`)
	host, _ := os.Hostname()
	out, _, code := runCLI(t, nil, "show", u)
	if code != 0 || !strings.Contains(out, "sleep, pid ") || !strings.Contains(out, host) {
		t.Errorf("show: exit %d:\n%s\nwant a process line naming sleep on %s", code, out, host)
	}
	if s := showJSONOf(t, u); s.Process == nil || s.Process.Tool != "sleep" || s.Process.PID == 0 || s.Process.Host != host {
		t.Errorf("show --json process: %+v", s.Process)
	}
	a.signal(syscall.SIGTERM)
	a.wait()
}

// TestGarbageLeaseTakenOverAcrossRuns: garbage in LEASE, and a job that
// runs hold without --wait every couple of seconds (as cron would), each
// run a new process with a new instance id. With the state directory, a
// run takes the lease over once the garbage has stayed unchanged for a TTL
// across runs; without it, every run is refused.
func TestGarbageLeaseTakenOverAcrossRuns(t *testing.T) {
	for _, withState := range []bool{true, false} {
		u, dir := fileURL(t)
		if err := os.WriteFile(filepath.Join(dir, "LEASE"), []byte("garbage\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		stateArg := t.TempDir()
		if !withState {
			stateArg = "none"
		}
		ran := -1
		for i := range 6 {
			out, errOut, code := runCLI(t, nil, "hold", u, "--ttl", "3s", "--state-dir", stateArg, "--", "echo", "RAN")
			if code == 0 && strings.TrimSpace(out) == "RAN" {
				ran = i
				break
			}
			if code != exitcode.Held || !strings.Contains(errOut, "suspect") {
				t.Fatalf("run %d (state %v): exit %d: %s", i, withState, code, errOut)
			}
			time.Sleep(1500 * time.Millisecond)
		}
		switch {
		case withState && ran < 1:
			t.Errorf("with the state directory: the job ran at run %d; want it refused first, then run once the garbage stayed a TTL", ran)
		case !withState && ran != -1:
			t.Errorf("without the state directory, run %d took over garbage that no single process watched for a TTL", ran)
		}
	}
}

// TestBestEffortSaysSoByDefault: under MUSHROOMDB_BACKUP_LEASE_CONDITIONAL=off
// hold warns that exclusion is best-effort at its default log level (the
// lease's own WARN goes to a log that is off by default); a conditional
// lease says nothing of the kind.
func TestBestEffortSaysSoByDefault(t *testing.T) {
	u, _ := fileURL(t)
	_, errOut, code := runCLI(t, []string{"MUSHROOMDB_BACKUP_LEASE_CONDITIONAL=off"}, "hold", u, "--ttl", "3s", "--", "true")
	if code != 0 || !strings.Contains(errOut, "warning") || !strings.Contains(errOut, "best-effort") {
		t.Fatalf("best-effort hold: exit %d, stderr %q; want a warning", code, errOut)
	}
	u2, _ := fileURL(t)
	if _, errOut, _ := runCLI(t, nil, "hold", u2, "--ttl", "3s", "--", "true"); strings.Contains(errOut, "warning") {
		t.Fatalf("a conditional hold warned: %q", errOut)
	}
}
