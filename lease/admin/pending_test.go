//go:build unix

package admin_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/file"
	"github.com/mushroomdb/bucketlease/lease"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// leftStaged makes in dir the staged file a file:// writer that died
// leaves: put-NAME and its note naming key and a process that is gone,
// unlocked, started at started.
func leftStaged(t *testing.T, dir, name, key string, started time.Time) string {
	t.Helper()
	tmp := filepath.Join(dir, ".bucketlease", "tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(tmp, "put-"+name)
	if err := os.WriteFile(p, []byte("part of a body"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p+".key", []byte(strconv.Quote(key)+"\npid 999999\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{p, p + ".key"} {
		if err := os.Chtimes(f, started, started); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// outcomes maps each upload's key to whether RemovePending removed it.
func outcomes(r admin.PendingReport) map[string]bool {
	m := map[string]bool{}
	for _, u := range r.Uploads {
		m[u.Key] = u.Removed
	}
	return m
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// TestRemovePendingByAge: on file://, with no lease taken, RemovePending
// removes the dead writers' staged files under the prefix started more
// than OlderThan ago, keeps a younger one and one under another prefix,
// and under DryRun reports the same and removes nothing.
func TestRemovePendingByAge(t *testing.T) {
	dir := t.TempDir()
	b, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	old := leftStaged(t, dir, "old", "db1/old.sql", time.Now().Add(-2*time.Hour))
	young := leftStaged(t, dir, "young", "db1/young.sql", time.Now().Add(-time.Minute))
	other := leftStaged(t, dir, "other", "db2/other.sql", time.Now().Add(-2*time.Hour))
	want := map[string]bool{"db1/old.sql": true, "db1/young.sql": false}
	for _, dry := range []bool{true, false} {
		r, err := admin.RemovePending(ctx, bucket.New(b, "db1"), admin.PendingOptions{OlderThan: time.Hour, DryRun: dry})
		if err != nil || r.Prefix != "db1/" || len(r.Uploads) != 2 || !mapsEqual(outcomes(r), want) {
			t.Fatalf("dry run %v: %+v, %v", dry, r, err)
		}
		if exists(old) != dry || !exists(young) || !exists(other) {
			t.Errorf("dry run %v: old %v, young %v, other %v left", dry, exists(old), exists(young), exists(other))
		}
	}
	if _, err := admin.RemovePending(ctx, bucket.New(b, "db1"), admin.PendingOptions{OlderThan: -time.Second}); err == nil {
		t.Error("a negative OlderThan was accepted")
	}
}

func mapsEqual(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestRemovePendingKeepsLiveHolders: an upload a live holder may still
// commit stays, of any age asked for: one started after the prefix's
// fresh lease began, one under a nested prefix's fresh lease, one under a
// lease object no reader can judge, one under a fresh record of Break, and
// a staged file whose writer still runs (the file driver refuses it). One started long before the live
// holder's lease began (an earlier holder's) goes.
func TestRemovePendingKeepsLiveHolders(t *testing.T) {
	dir := t.TempDir()
	b, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, p := range []string{"db1", "db2/sub"} {
		l, err := lease.Acquire(ctx, bucket.New(b, p), &lease.Options{InstanceID: "holder-" + p, TTL: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Release(context.WithoutCancel(ctx))
	}
	if _, err := b.Put(ctx, "db4/LEASE", []byte("not a lease"), driver.PutOptions{If: driver.IfAbsent()}); err != nil {
		t.Fatal(err)
	}
	broken, err := lease.Acquire(ctx, bucket.New(b, "db5"), &lease.Options{InstanceID: "broken", TTL: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer broken.Release(context.WithoutCancel(ctx))
	if st, err := admin.Inspect(ctx, bucket.New(b, "db5"), time.Now()); err != nil || lease.Break(ctx, bucket.New(b, "db5"), st.Version, time.Now(), false) != nil {
		t.Fatalf("breaking db5: %v", err)
	}
	pr, pw := io.Pipe()
	defer pw.Close()
	writing := make(chan error, 1)
	go func() {
		_, err := b.PutStream(ctx, "db3/live.sql", pr, driver.PutOptions{If: driver.IfAbsent()}, nil)
		writing <- err
	}()
	if _, err := pw.Write(make([]byte, 1<<10)); err != nil {
		t.Fatal(err)
	}
	// Every write sweeps the staged files of dead writers: make them
	// once the last write has started.
	ago := time.Now().Add(-time.Hour)
	after := leftStaged(t, dir, "after", "db1/after.sql", time.Now())
	before := leftStaged(t, dir, "before", "db1/before.sql", ago)
	nested := leftStaged(t, dir, "nested", "db2/sub/x.sql", time.Now())
	suspect := leftStaged(t, dir, "suspect", "db4/x.sql", ago)
	brokenHolder := leftStaged(t, dir, "broken", "db5/x.sql", time.Now())

	for prefix, want := range map[string]map[string]bool{
		"db1": {"db1/after.sql": false, "db1/before.sql": true},
		"db2": {"db2/sub/x.sql": false},
		"db3": {"db3/live.sql": false},
		"db4": {"db4/x.sql": false},
		"db5": {"db5/x.sql": false},
	} {
		r, err := admin.RemovePending(ctx, bucket.New(b, prefix), admin.PendingOptions{})
		if err != nil || !mapsEqual(outcomes(r), want) {
			t.Errorf("%s: %v, %+v", prefix, err, r)
		}
		for _, u := range r.Uploads {
			if !u.Removed && !strings.HasPrefix(u.Why, "kept: ") {
				t.Errorf("%s: kept %s says %q", prefix, u.Key, u.Why)
			}
		}
	}
	if !exists(after) || exists(before) || !exists(nested) || !exists(suspect) || !exists(brokenHolder) {
		t.Errorf("left: after %v, before %v, nested %v, suspect %v, broken %v",
			exists(after), exists(before), exists(nested), exists(suspect), exists(brokenHolder))
	}
	pw.CloseWithError(errors.New("the test ends the write"))
	if err := <-writing; err == nil {
		t.Error("the live write committed")
	}
}
