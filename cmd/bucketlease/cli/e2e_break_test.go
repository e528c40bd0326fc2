//go:build unix

package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/exitcode"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/report"
	"github.com/mushroomdb/bucketlease/internal/testsupport/miniotest"
)

// A write is one line a command appended to the shared log: who wrote it
// and when (ns since the epoch, by this machine's clock).
type write struct {
	who string
	at  time.Time
}

// readWrites returns the lines of the shared log, in the order they were
// appended.
func readWrites(t *testing.T, path string) []write {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []write
	for _, line := range strings.Split(string(b), "\n") {
		who, ns, ok := strings.Cut(line, " ")
		n, err := strconv.ParseInt(ns, 10, 64)
		if !ok || err != nil {
			continue
		}
		out = append(out, write{who, time.Unix(0, n)})
	}
	return out
}

// waitWrites waits until who has appended n lines to the log.
func waitWrites(t *testing.T, path, who string, n int) {
	t.Helper()
	for end := time.Now().Add(eventTimeout); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		c := 0
		for _, w := range readWrites(t, path) {
			if w.who == who {
				c++
			}
		}
		if c >= n {
			return
		}
	}
	t.Fatalf("%s appended fewer than %d lines to %s in %v", who, n, path, eventTimeout)
}

// logWriter is a command that appends "WHO NS" to log every 50 ms and
// carries on after SIGTERM, as a backup finishing its current step would.
func logWriter(who, log string) string {
	return fmt.Sprintf(`trap 'echo %s got TERM' TERM; while :; do echo "%s $(date +%%s%%N)" >> %s; sleep 0.05; done`, who, who, log)
}

// breakWhileWaiting: holder A's
// command writes to a shared log every 50 ms; hold --wait B waits with a
// command that writes to the same log; an operator breaks A's fresh lease
// with break --force. It returns the log, the record that was broken, and
// A's output.
func breakWhileWaiting(t *testing.T, env []string, u string) (writes []write, broken report.ShowJSON, outA string) {
	t.Helper()
	log := filepath.Join(t.TempDir(), "writes")
	a := start(t, env, "hold", u, "--ttl", "6s", "--instance-id", "alpha", "--grace", "10m", "--", "sh", "-c", logWriter("A", log))
	a.waitFor(`command-started`)
	waitWrites(t, log, "A", 3)
	b := start(t, env, "hold", u, "--ttl", "6s", "--instance-id", "beta", "--wait", "--", "sh", "-c", logWriter("B", log))
	b.waitFor(`waiting`)
	var errOut string
	code := -1
	for range 10 { // A may renew between show and break
		broken = showWith(t, env, u)
		if broken.Holder != "alpha" || broken.State != "fresh" {
			t.Fatalf("before the break: %+v", broken)
		}
		var out string
		out, errOut, code = runCLI(t, env, "break", u, "--version", broken.Version, "--force")
		if code == 0 {
			if !strings.Contains(out, "stays fresh until") {
				t.Errorf("break --force of a fresh lease does not say until when it stays blocked:\n%s", out)
			}
			break
		}
	}
	if code != 0 {
		t.Fatalf("break --force: exit %d: %s", code, errOut)
	}
	if out, _, _ := runCLI(t, env, "show", u); !strings.Contains(out, "fresh: broken by an operator; nobody may take it over until its broken holder's fence has passed") ||
		!strings.Contains(out, "when the break's record goes stale") {
		t.Errorf("show after break --force does not say the lease is broken and until when it is blocked:\n%s", out)
	}
	b.waitFor(`waiting\s+lease \S*LEASE was broken by an operator \(bucketlease break\).* free only at`)
	if c := a.wait(); c != exitcode.LeaseEnded {
		t.Errorf("the broken hold exited %d, want %d", c, exitcode.LeaseEnded)
	}
	b.waitFor(`command-started`)
	waitWrites(t, log, "B", 3)
	b.signal(syscall.SIGTERM)
	b.wait()
	return readWrites(t, log), broken, a.output()
}

// checkNoOverlap fails t if B wrote before A's last write, or before the
// broken record went stale by this machine's clock (renewed_at + ttl_s).
func checkNoOverlap(t *testing.T, writes []write, broken report.ShowJSON) {
	t.Helper()
	var lastA, firstB time.Time
	for _, w := range writes {
		switch {
		case w.who == "A" && !firstB.IsZero():
			t.Errorf("two writers: A wrote at %s, after B's first write at %s", w.at.Format(time.RFC3339Nano), firstB.Format(time.RFC3339Nano))
		case w.who == "A":
			lastA = w.at
		case w.who == "B" && firstB.IsZero():
			firstB = w.at
		}
	}
	if lastA.IsZero() || firstB.IsZero() {
		t.Fatalf("the log has no writes of A or of B: %v", writes)
	}
	if !lastA.Before(firstB) {
		t.Errorf("two writers: A's last write at %s, B's first at %s", lastA.Format(time.RFC3339Nano), firstB.Format(time.RFC3339Nano))
	}
	renewed, err := time.Parse(time.RFC3339Nano, broken.RenewedAt)
	if err != nil || broken.TTLSeconds == nil {
		t.Fatalf("the broken record: %+v: %v", broken, err)
	}
	stale := renewed.Add(time.Duration(*broken.TTLSeconds) * time.Second)
	if firstB.Before(stale) {
		t.Errorf("B started writing at %s, %v before the broken record went stale (%s): the broken holder could still have been writing",
			firstB.Format(time.RFC3339Nano), stale.Sub(firstB), stale.Format(time.RFC3339Nano))
	}
	t.Logf("A's last write %s; the broken record stale at %s; B's first write %s (%v after A's last)",
		lastA.Format(time.RFC3339Nano), stale.Format(time.RFC3339Nano), firstB.Format(time.RFC3339Nano), firstB.Sub(lastA).Round(time.Millisecond))
}

// TestBreakForceNoOverlap: break --force of a live holder's lease while a
// hold --wait waits never lets two writers in: the broken holder's command
// is killed at once (SIGKILL: it traps SIGTERM, and --grace is 10m), and
// the waiter takes the lease only once the broken record would have gone
// stale, after the broken holder's fence. It failed on the old break,
// which wrote a released record that the waiter took at once while the
// broken command ran on for --grace (mutant break-released-at-once), and
// with SIGTERM and --grace for a lost lease (mutant lost-lease-grace).
func TestBreakForceNoOverlap(t *testing.T) {
	u, _ := fileURL(t)
	writes, broken, outA := breakWhileWaiting(t, nil, u)
	checkNoOverlap(t, writes, broken)
	if strings.Contains(outA, "A got TERM") {
		t.Errorf("the broken holder's command got SIGTERM and a grace, not SIGKILL at once:\n%s", outA)
	}
}

// TestBreakForceNoOverlapMinIO is TestBreakForceNoOverlap on MinIO.
func TestBreakForceNoOverlapMinIO(t *testing.T) {
	srv := miniotest.Env(t)
	bucket := srv.NewBucket(t)
	env := minioEnv(t, srv)
	u := "minio://" + srv.Addr + "/" + bucket + "/db1?tls=false"
	writes, broken, outA := breakWhileWaiting(t, env, u)
	checkNoOverlap(t, writes, broken)
	if strings.Contains(outA, "A got TERM") {
		t.Errorf("the broken holder's command got SIGTERM and a grace, not SIGKILL at once:\n%s", outA)
	}
}

// TestBreakAllowOverlap: --allow-overlap lets another instance take a
// fresh lease at once and says what it risks; the broken holder's command
// is killed at once all the same.
func TestBreakAllowOverlap(t *testing.T) {
	u, _ := fileURL(t)
	log := filepath.Join(t.TempDir(), "writes")
	a := start(t, nil, "hold", u, "--ttl", "30s", "--instance-id", "alpha", "--grace", "10m", "--", "sh", "-c", logWriter("A", log))
	a.waitFor(`command-started`)
	s := showJSONOf(t, u)
	_, errOut, code := runCLI(t, nil, "break", u, "--version", s.Version, "--allow-overlap")
	if code != exitcode.Refused || !strings.Contains(errOut, "--force") {
		t.Errorf("--allow-overlap without --force on a fresh lease: exit %d: %s", code, errOut)
	}
	out, errOut, code := runCLI(t, nil, "break", u, "--version", s.Version, "--allow-overlap", "--force")
	if code != 0 || !strings.Contains(out, "Another instance may take it now, while its holder instance alpha, if alive, may still write until its fence") {
		t.Fatalf("break --allow-overlap --force: exit %d\n%s\n%s", code, out, errOut)
	}
	if st := showJSONOf(t, u); st.State != "released" {
		t.Errorf("after break --allow-overlap: %+v", st)
	}
	if c := a.exitWithin(exitTimeout); c != exitcode.LeaseEnded {
		t.Errorf("the broken hold exited %d, want %d", c, exitcode.LeaseEnded)
	}
	if strings.Contains(a.output(), "A got TERM") {
		t.Errorf("the broken holder's command got SIGTERM and a grace, not SIGKILL at once:\n%s", a.output())
	}
}

// TestHoldDeletedLeaseNotReleased: a hold whose lease object something
// else deleted reports lease-gone and exits 124, and never says
// "released" afterwards: there was nothing of its own left to release.
// With a command and without one.
func TestHoldDeletedLeaseNotReleased(t *testing.T) {
	for _, command := range [][]string{nil, {"--", "sleep", "120"}} {
		u, dir := fileURL(t)
		a := start(t, nil, append([]string{"hold", u, "--ttl", "6s"}, command...)...)
		a.waitFor(`holding`)
		if err := os.Remove(filepath.Join(dir, "LEASE")); err != nil {
			t.Fatal(err)
		}
		a.waitFor(`lease-gone`)
		if code := a.exitWithin(exitTimeout); code != exitcode.LeaseEnded {
			t.Errorf("command %q: exit %d, want %d", command, code, exitcode.LeaseEnded)
		}
		out := a.output()
		if strings.Contains(out, "released lease") || !strings.Contains(out, "not-released") {
			t.Errorf("command %q: after lease-gone, hold says it released the lease, or does not say it did not:\n%s", command, out)
		}
	}
}
