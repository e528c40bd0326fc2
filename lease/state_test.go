package lease_test

import (
	"encoding/json"
	"fmt"
	"time"

	"context"
	"errors"
	"testing"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/internal/objects"

	"github.com/mushroomdb/bucketlease/clock"
	"github.com/mushroomdb/bucketlease/lease"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// withState returns options for instance id with a state directory.
func withState(id, dir string, c clock.Clock, ev *events) *lease.Options {
	o := opts(id, c, ev)
	o.StateDir = dir
	return o
}

// A restart of an instance (same id, same state directory, the previous
// process gone) adopts its lease at once.
func TestRestartWithItsStateAdoptsAtOnce(t *testing.T) {
	ctx := context.Background()
	b := machineClocksOnly()
	c := clock.NewFake(t0)
	dir := t.TempDir()
	first, err := lease.NewContender(bucket.New(b, "db1"), withState("me", dir, c, nil))
	if err != nil {
		t.Fatal(err)
	}
	old, err := first.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c.Advance(ttl / 3)
	if err := old.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	first.Close() // the process dies: the kernel drops its lock

	var ev events
	second, err := lease.NewContender(bucket.New(b, "db1"), withState("me", dir, c, &ev))
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	l, err := second.Acquire(ctx)
	if err != nil {
		t.Fatalf("the restart did not adopt its own lease: %v", err)
	}
	if !ev.has(lease.EventAcquired) || !contains(ev.list[0].Detail, "adopted") {
		t.Fatalf("events %v, detail %q", ev.kinds(), ev.list[0].Detail)
	}
	if err := old.Renew(ctx); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("the dead process's lease, renewed after the adoption: %v, want ErrLost", err)
	}
	if err := l.Renew(ctx); err != nil {
		t.Fatal(err)
	}
}

// stoppedPredecessor: the previous process is stopped (SIGSTOP), not dead:
// it keeps the lock, and a new process with the same id and state waits. It
// returns what went wrong, or "".
func stoppedPredecessor(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	b := machineClocksOnly()
	c := clock.NewFake(t0)
	dir := t.TempDir()
	first, err := lease.NewContender(bucket.New(b, "db1"), withState("me", dir, c, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if _, err := first.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	second, err := lease.NewContender(bucket.New(b, "db1"), withState("me", dir, c, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if _, err := second.Acquire(ctx); !errors.Is(err, lease.ErrHeld) {
		return "a process adopted the lease of a live (stopped) predecessor: " + errString(err)
	}
	return ""
}

func TestStoppedPredecessorIsNeverAdopted(t *testing.T) {
	check(t, stoppedPredecessor)
}

// A twin with the same id but its own state directory (another machine)
// never adopts, even once the first process is gone.
func TestTwinWithItsOwnStateNeverAdopts(t *testing.T) {
	ctx := context.Background()
	b := machineClocksOnly()
	c := clock.NewFake(t0)
	first, err := lease.NewContender(bucket.New(b, "db1"), withState("me", t.TempDir(), c, nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	first.Close()
	twin, err := lease.NewContender(bucket.New(b, "db1"), withState("me", t.TempDir(), c, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer twin.Close()
	_, err = twin.Acquire(ctx)
	var held *lease.HeldError
	if !errors.As(err, &held) || !held.SameID {
		t.Fatalf("a twin with its own state directory: %v, want a HeldError for the same id", err)
	}
	// Without a state directory at all, likewise.
	if _, err := lease.Acquire(ctx, bucket.New(b, "db1"), opts("me", c, nil)); !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("a twin without a state directory: %v", err)
	}
}

// A record that a predecessor never wrote (another instance took over after
// it died) is not adopted through the state directory.
func TestStateAdoptsOnlyItsOwnRecords(t *testing.T) {
	ctx := context.Background()
	b := machineClocksOnly()
	c := clock.NewFake(t0)
	dir := t.TempDir()
	first, err := lease.NewContender(bucket.New(b, "db1"), withState("me", dir, c, nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	first.Close()
	c.Advance(ttl + 1)
	if _, err := lease.Acquire(ctx, bucket.New(b, "db1"), opts("other", c, nil)); err != nil {
		t.Fatal(err)
	}
	second, err := lease.NewContender(bucket.New(b, "db1"), withState("me", dir, c, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if _, err := second.Acquire(ctx); !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("adopted another instance's lease: %v", err)
	}
}

func TestStateDirMustBeAbsolute(t *testing.T) {
	if _, err := lease.NewContender(bucket.New(machineClocksOnly(), "db1"), withState("me", "relative/dir", clock.NewFake(t0), nil)); err == nil {
		t.Fatal("a relative StateDir was accepted")
	}
}

// The contender's Watch is a value a caller can ask at once.
func TestWatchOfAContender(t *testing.T) {
	ctx := context.Background()
	b := machineClocksOnly()
	c := clock.NewFake(t0)
	put(t, b, "not a record")
	con, err := lease.NewContender(bucket.New(b, "db1"), opts("me", c, nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := con.Watch().Since(); ok {
		t.Fatal("a watch before any attempt")
	}
	if _, err := con.Acquire(ctx); !errors.Is(err, lease.ErrHeld) {
		t.Fatal(err)
	}
	if _, ok := con.Watch().Since(); !ok || con.Watch().Version() == "" {
		t.Fatalf("no watch of the suspect record: %+v", con.Watch())
	}
}

// Item 8 of the CLI issue: who holds it. The informational fields
// round-trip, a record written without them (by earlier versions) still
// decodes, a mangled description drops only the description, and a reader
// that knows only the spec's four fields reads a new record unchanged.
func TestHolderInfoInTheRecord(t *testing.T) {
	ctx := context.Background()
	b := machineClocksOnly()
	o := opts("me", clock.NewFake(t0), nil)
	o.Holder = &admin.HolderInfo{Host: "db-7", PID: 4242, User: "backup", Tool: "pg_dump"}
	if _, err := lease.Acquire(ctx, bucket.New(b, "db1"), o); err != nil {
		t.Fatal(err)
	}
	r, _, ok := readRecord(t, b)
	if !ok || r.Holder == nil || *r.Holder != *o.Holder {
		t.Fatalf("stored holder %+v", r.Holder)
	}
	data, _, err := objects.ReadAll(ctx, b, "db1/LEASE", 1<<20, driver.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var spec struct {
		InstanceID string    `json:"instance_id"`
		AcquiredAt time.Time `json:"acquired_at"`
		RenewedAt  time.Time `json:"renewed_at"`
		TTLSeconds int64     `json:"ttl_s"`
	}
	if err := json.Unmarshal(data, &spec); err != nil || spec.InstanceID != "me" || spec.TTLSeconds != 30 || !spec.RenewedAt.Equal(r.RenewedAt) {
		t.Fatalf("a reader of the four spec fields: %+v, %v", spec, err)
	}
	old := `{"instance_id":"a","acquired_at":"2026-11-30T12:00:00Z","renewed_at":"2026-11-30T12:00:00Z","ttl_s":30}`
	if r, err := admin.DecodeRecord([]byte(old)); err != nil || r.Holder != nil || r.InstanceID != "a" {
		t.Fatalf("a record written by earlier versions: %+v, %v", r, err)
	}
	mangled := `{"instance_id":"a","acquired_at":"2026-11-30T12:00:00Z","renewed_at":"2026-11-30T12:00:00Z","ttl_s":30,"holder":5}`
	if r, err := admin.DecodeRecord([]byte(mangled)); err != nil || r.Holder != nil {
		t.Fatalf("a record with a mangled holder: %+v, %v", r, err)
	}
	o.Holder = &admin.HolderInfo{Tool: "evil\ntool"}
	if _, err := lease.NewContender(bucket.New(b, "db1"), o); err == nil {
		t.Fatal("a holder description with a control character was accepted")
	}
	if h := lease.ThisProcess("hold"); h.PID == 0 || h.Tool != "hold" {
		t.Fatalf("ThisProcess: %+v", h)
	}
}

// Item 9 of the CLI issue: a suspect record (garbage in LEASE) is taken
// over by a job that runs as a new process each time, once the record has
// stayed unchanged for a TTL across those runs; without a state directory
// each run starts its watch afresh.
func TestSuspectWatchSurvivesAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	b := machineClocksOnly()
	c := clock.NewFake(t0)
	put(t, b, "garbage")
	dir := t.TempDir()
	runs := 0
	run := func(state string) error {
		runs++
		o := opts(fmt.Sprintf("cron-%d", runs), c, nil) // a new id each run, as hold's default
		o.StateDir = state
		con, err := lease.NewContender(bucket.New(b, "db1"), o)
		if err != nil {
			t.Fatal(err)
		}
		defer con.Close()
		l, err := con.Acquire(ctx)
		if err == nil {
			return l.Release(ctx)
		}
		return err
	}
	for i := range 2 {
		if err := run(""); !errors.Is(err, lease.ErrHeld) {
			t.Fatalf("run %d without state: %v, want ErrHeld", i, err)
		}
		if err := run(dir); !errors.Is(err, lease.ErrHeld) {
			t.Fatalf("run %d with state: %v, want ErrHeld", i, err)
		}
		c.Advance(ttl / 2)
	}
	c.Advance(time.Second)
	if err := run(""); !errors.Is(err, lease.ErrHeld) {
		t.Fatalf("without state: %v, want ErrHeld: no single process watched for a TTL", err)
	}
	if err := run(dir); err != nil {
		t.Fatalf("with state, after the suspect record stayed unchanged for more than a TTL across runs: %v", err)
	}
}
