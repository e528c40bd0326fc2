package lease_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/clock"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/examples/backupworker"
	"github.com/mushroomdb/bucketlease/internal/objects"
	"github.com/mushroomdb/bucketlease/lease"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// lateKeys returns the keys LateWrites yields for db1 in b.
func lateKeys(t *testing.T, b driver.Bucket, now time.Time) []string {
	t.Helper()
	var keys []string
	for w, err := range admin.LateWrites(context.Background(), bucket.New(b, "db1"), now) {
		if err != nil {
			t.Fatalf("LateWrites: %v", err)
		}
		if w.By < 0 {
			t.Errorf("%s: late by %v", w.Key, w.By)
		}
		keys = append(keys, w.Key)
	}
	return keys
}

// sendAs writes key directly to the bucket stamped as l's: the request a
// holder sent before it paused, which the service receives when it wakes
// (what no lease can stop, and what the stamp lets a reader see).
func sendAs(t *testing.T, b driver.Bucket, l *lease.Lease, key string) {
	t.Helper()
	st, _ := l.Stamp()
	if _, err := b.Put(context.Background(), "db1/"+key, []byte(key), driver.PutOptions{Metadata: st.Metadata()}); err != nil {
		t.Fatal(err)
	}
}

// TestLateWritesFindsWhatAPausedHolderSent: holder A writes in time; it
// stops renewing (a paused VM), B takes the prefix over and writes; then
// A's request sent before its pause lands. LateWrites finds that object
// alone: not A's earlier writes, not one that landed in the same second
// just before B took over, not B's own. After C takes over from B, the
// record still remembers B, and a late write of A is judged by B's era.
func TestLateWritesFindsWhatAPausedHolderSent(t *testing.T) {
	inWorld(t, time.Second, func(t *testing.T, w serviceWorld) {
		ctx := context.Background()
		a, err := lease.Acquire(ctx, bucket.New(w.b, "db1"), opts("a", w.machine(0), nil))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.Bucket().Driver().Put(ctx, "chunks/1", []byte("in time"), driver.PutOptions{If: driver.IfAbsent()}); err != nil {
			t.Fatal(err)
		}
		w.advance(ttl / 3)
		if err := a.Renew(ctx); err != nil {
			t.Fatal(err)
		}
		if rec, _, _ := readRecord(t, w.b); rec.Began.IsZero() {
			t.Fatalf("the renewed record has no began: %+v", rec)
		}
		// A pauses; its lease goes stale.
		w.advance(ttl + 2*time.Second)
		// A request of A's lands just before B takes over, in the same
		// second: written in time.
		sendAs(t, w.b, a, "chunks/edge")
		b, err := lease.Acquire(ctx, bucket.New(w.b, "db1"), opts("b", w.machine(0), nil))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Bucket().Driver().Put(ctx, "chunks/2", []byte("b's"), driver.PutOptions{If: driver.IfAbsent()}); err != nil {
			t.Fatal(err)
		}
		w.advance(2 * time.Second)
		sendAs(t, w.b, a, "chunks/late") // A wakes
		if got := lateKeys(t, w.b, w.now()); !slices.Equal(got, []string{"chunks/late"}) {
			t.Fatalf("late writes %v, want [chunks/late]", got)
		}
		for lw, err := range admin.LateWrites(ctx, bucket.New(w.b, "db1"), w.now()) {
			if err != nil || lw.Stamp.Epoch != a.Epoch() || lw.Stamp.Instance != "a" || lw.After.Epoch != b.Epoch() || lw.By < time.Second {
				t.Errorf("%+v, %v: want A's stamp, after B's era, by at least a second", lw, err)
			}
		}
		// A reader judges the very version it read: A's late write late,
		// naming that version; B's in time.
		rb := bucket.New(w.b, "db1")
		st, err := admin.Inspect(ctx, rb, w.now())
		if err != nil {
			t.Fatal(err)
		}
		_, la, err := rb.ReadAll(ctx, "chunks/late", 1<<10)
		if lw, late := st.LateRead("chunks/late", la); err != nil || !late || lw.Version != la.Version || lw.Key != "chunks/late" || lw.After.Epoch != b.Epoch() {
			t.Errorf("LateRead of A's late write: %+v, %v, %v; want late after B's era, naming the version read", lw, late, err)
		}
		_, ba, err := rb.ReadAll(ctx, "chunks/2", 1<<10)
		if _, late := st.LateRead("chunks/2", ba); err != nil || late {
			t.Errorf("LateRead of B's write: late %v, %v; want in time", late, err)
		}

		// B renews, then dies; A's next late write lands while B's record
		// is still there, and C takes over after it. The write is judged
		// by B's era, which C's record remembers.
		w.advance(ttl / 3)
		if err := b.Renew(ctx); err != nil {
			t.Fatal(err)
		}
		if err := w.b.Delete(ctx, "db1/chunks/late", driver.Condition{}); err != nil {
			t.Fatal(err)
		}
		w.advance(ttl + 2*time.Second)
		sendAs(t, w.b, a, "chunks/later")
		w.advance(2 * time.Second)
		c, err := lease.Acquire(ctx, bucket.New(w.b, "db1"), opts("c", w.machine(0), nil))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Release(ctx)
		rec, _, _ := readRecord(t, w.b)
		if len(rec.Before) != 2 || rec.Before[0].Epoch != b.Epoch() || rec.Before[1].Epoch != a.Epoch() {
			t.Fatalf("C's record remembers %+v, want B's era then A's", rec.Before)
		}
		got := lateKeys(t, w.b, w.now())
		if !slices.Equal(got, []string{"chunks/later"}) {
			t.Fatalf("late writes %v, want [chunks/later]", got)
		}
	})
}

// TestLateWritesWithoutListedMetadata: where the listing carries no
// metadata (S3), each object's is read with a Get, and the late write is
// still found, after the next holder released the prefix too.
func TestLateWritesWithoutListedMetadata(t *testing.T) {
	inWorld(t, time.Second, func(t *testing.T, w serviceWorld) {
		ctx := context.Background()
		b := unlistedMetadata{w.b}
		a, err := lease.Acquire(ctx, bucket.New(b, "db1"), opts("a", w.machine(0), nil))
		if err != nil {
			t.Fatal(err)
		}
		w.advance(ttl + 2*time.Second)
		next, err := lease.Acquire(ctx, bucket.New(b, "db1"), opts("b", w.machine(0), nil))
		if err != nil {
			t.Fatal(err)
		}
		w.advance(2 * time.Second)
		sendAs(t, w.b, a, "late")
		// Released before its first renewal: the released record says
		// when its holder began, so the judgement does not move to the
		// release.
		w.advance(2 * time.Second)
		if err := next.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if got := lateKeys(t, b, w.now()); !slices.Equal(got, []string{"late"}) {
			t.Fatalf("late writes %v, want [late]", got)
		}
	})
}

// unlistedMetadata is a mem bucket whose listing carries no metadata, as
// S3's ListObjectsV2 does not.
type unlistedMetadata struct{ driver.Bucket }

func (u unlistedMetadata) Capabilities() driver.Capabilities {
	c := u.Bucket.Capabilities()
	c.ListMetadata = false
	return c
}

func (u unlistedMetadata) List(ctx context.Context, prefix string) iter.Seq2[driver.Object, error] {
	return func(yield func(driver.Object, error) bool) {
		for o, err := range u.Bucket.List(ctx, prefix) {
			o.Metadata = nil
			if !yield(o, err) {
				return
			}
		}
	}
}

// TestLateWritesNeedsEras: without the service's time the lease object
// tells no beginnings, and LateWrites says so rather than report nothing.
func TestLateWritesNeedsEras(t *testing.T) {
	ctx := context.Background()
	b := machineClocksOnly()
	l, err := lease.Acquire(ctx, bucket.New(b, "db1"), opts("a", clock.NewFake(t0), nil))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	for _, err := range admin.LateWrites(ctx, bucket.New(b, "db1"), t0) {
		if !errors.Is(err, admin.ErrNoEras) {
			t.Fatalf("LateWrites without service time: %v, want ErrNoEras", err)
		}
		return
	}
	t.Fatal("LateWrites yielded nothing, want ErrNoEras")
}

// TestWorkerNeverRestoresALateWrite: the example worker
// (examples/backupworker) backs up days 1 and 2 as holder A; A pauses, B takes the prefix
// over, and then A's requests of day 3 land: a chunk, a manifest, and
// LATEST moved to it (its If-Match holds: nobody moved LATEST since A read
// it). A restore that trusts LATEST would restore A's late day 3; the
// worker's restore skips it and restores day 2, and its retention removes
// the late manifest and the chunk only it names.
func TestWorkerNeverRestoresALateWrite(t *testing.T) {
	inWorld(t, time.Second, func(t *testing.T, w serviceWorld) {
		ctx := context.Background()
		a, err := lease.Acquire(ctx, bucket.New(w.b, "db1"), opts("a", w.machine(0), nil))
		if err != nil {
			t.Fatal(err)
		}
		for day := 1; day <= 2; day++ {
			if err := backupworker.BackupOnce(ctx, a.Bucket(), day, []io.Reader{strings.NewReader("base"), strings.NewReader(fmt.Sprint("day ", day))}); err != nil {
				t.Fatal(err)
			}
		}
		_, latest, err := objects.ReadAll(ctx, w.b, "db1/LATEST", 1<<10, driver.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w.advance(ttl + 2*time.Second) // A pauses
		b, err := lease.Acquire(ctx, bucket.New(w.b, "db1"), opts("b", w.machine(0), nil))
		if err != nil {
			t.Fatal(err)
		}
		defer b.Release(ctx)
		w.advance(2 * time.Second) // A wakes: its day-3 requests land
		st, _ := a.Stamp()
		m, _ := json.Marshal(backupworker.Manifest{Seq: 3, Chunks: []string{"chunks/base", "chunks/late-day-3"}})
		for _, put := range []struct {
			key  string
			data []byte
			cond driver.Condition
		}{
			{"db1/chunks/late-day-3", []byte("day 3"), driver.IfAbsent()},
			{"db1/manifests/00000003.json", m, driver.IfAbsent()},
			{"db1/LATEST", []byte("manifests/00000003.json"), driver.IfMatch(latest.Version)},
		} {
			if _, err := w.b.Put(ctx, put.key, put.data, driver.PutOptions{If: put.cond, Metadata: st.Metadata()}); err != nil {
				t.Fatalf("A's late %s: %v", put.key, err)
			}
		}
		// The control: LATEST, trusted, names the late day 3.
		if latest, _, _ := objects.ReadAll(ctx, w.b, "db1/LATEST", 1<<10, driver.GetOptions{}); string(latest) != "manifests/00000003.json" {
			t.Fatalf("LATEST names %q; the scenario needs A's late move of it", latest)
		}

		status, err := admin.Inspect(ctx, bucket.New(w.b, "db1"), w.now())
		if err != nil {
			t.Fatal(err)
		}
		got, err := backupworker.RestoreLatest(ctx, b.Bucket(), status)
		if err != nil || got.Seq != 2 {
			t.Fatalf("restore: %+v, %v; want day 2, the newest restore point written in time", got, err)
		}
		if err := backupworker.Retain(ctx, b.Bucket(), status, 2); err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"db1/manifests/00000003.json", "db1/chunks/late-day-3"} {
			if _, _, err := w.b.Get(ctx, key, driver.GetOptions{}); !errors.Is(err, driver.ErrNotExist) {
				t.Errorf("retention left A's late %s: %v", key, err)
			}
		}
		for _, key := range []string{"db1/manifests/00000001.json", "db1/manifests/00000002.json"} {
			if _, _, err := w.b.Get(ctx, key, driver.GetOptions{}); err != nil {
				t.Errorf("retention removed %s, written in time: %v", key, err)
			}
		}
	})
}
