//go:build unix

package cli

import (
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/report"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// TestBreakForcePrintsTakeoverTime: break --force of a fresh lease prints
// the moment a waiter takes the lease over, which hold --wait then names
// too and keeps to. The record was renewed 12 s before the break with a
// TTL of 20 s, so the broken record alone would go stale 8 s after the
// break, while the break's own record, judged against the service's
// clock, goes stale a TTL and the clock's resolution after the break: the
// two times are far enough apart that no slowness of the machine makes one
// pass for the other.
func TestBreakForcePrintsTakeoverTime(t *testing.T) {
	u, dir := fileURL(t)
	renewed := time.Now().Add(-12 * time.Second)
	v := writeRecord(t, dir, admin.Record{InstanceID: "alpha", AcquiredAt: renewed, RenewedAt: renewed, TTLSeconds: 20})
	out, errOut, code := runCLI(t, nil, "break", u, "--version", string(v), "--force")
	if code != 0 {
		t.Fatalf("break --force: exit %d:\n%s\n%s", code, out, errOut)
	}
	until := printedTime(t, `stays fresh until (\S+Z)`, out)
	b := start(t, nil, "hold", u, "--ttl", "20s", "--instance-id", "beta", "--wait")
	waiting := printedTime(t, `takeover possible at (\S+Z)`, b.waitFor(`takeover possible at`))
	if d := waiting.Sub(until); d < -1500*time.Millisecond || d > 1500*time.Millisecond {
		t.Errorf("break printed %s, hold --wait says takeover possible at %s", report.UTC(until), report.UTC(waiting))
	}
	b.waitFor(`took-over|acquired`)
	took := time.Now()
	// until is printed to the second, rounded down: the waiter takes over
	// after it, and well within a few seconds of it.
	if took.Before(until.Add(-500*time.Millisecond)) || took.After(until.Add(8*time.Second)) {
		t.Errorf("break printed %s, the waiter took over at %s", report.UTC(until), took.UTC().Format(time.RFC3339Nano))
	}
	b.signal(syscall.SIGTERM)
	b.wait()
}

// printedTime parses the time that re's first group finds in s.
func printedTime(t *testing.T, re, s string) time.Time {
	t.Helper()
	m := regexp.MustCompile(re).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("no %q in:\n%s", re, s)
	}
	at, err := time.Parse(time.RFC3339, m[1])
	if err != nil {
		t.Fatal(err)
	}
	return at
}
