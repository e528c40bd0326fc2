package besteffort_test

import (
	"context"
	"errors"
	"testing"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/besteffort"
	"github.com/mushroomdb/bucketlease/driver/mem"
	"github.com/mushroomdb/bucketlease/drivertest"
	"github.com/mushroomdb/bucketlease/drivertest/faulty"
	"github.com/mushroomdb/bucketlease/internal/testsupport/wrapcheck"
)

// Best-effort emulation passes every sequential check of the suite, even on
// a store that ignores preconditions; the race checks do not apply to it,
// which is exactly what BestEffort declares.
func TestConformanceOverAnIgnoringStore(t *testing.T) {
	inner := &faulty.Bucket{Bucket: mem.New(), Ignore: faulty.IgnoreIfAbsent | faulty.IgnoreIfMatch}
	b := besteffort.Wrap(inner)
	if got := b.Capabilities().Exclusion; got != driver.BestEffort {
		t.Fatalf("declares %v", got)
	}
	drivertest.Run(t, b, drivertest.Options{})
}

func TestReadThenWrite(t *testing.T) {
	ctx := context.Background()
	counting := &faulty.Counting{Bucket: mem.New()}
	b := besteffort.Wrap(counting)
	v, err := b.Put(ctx, "k", []byte("1"), driver.IfAbsent())
	if err != nil {
		t.Fatal(err)
	}
	if gets, puts, _ := counting.Counts(); gets != 1 || puts != 1 {
		t.Fatalf("IfAbsent cost %d reads and %d writes, want one of each", gets, puts)
	}
	if _, err := b.Put(ctx, "k", []byte("2"), driver.IfMatch(driver.FakeVersion(v))); !errors.Is(err, driver.ErrPrecondition) {
		t.Fatalf("IfMatch with a wrong version: %v", err)
	}
	if err := b.Delete(ctx, "k", driver.IfAbsent()); !errors.Is(err, driver.ErrUnsupported) {
		t.Fatalf("Delete IfAbsent: %v", err)
	}
	if u, ok := b.(interface{ Unwrap() driver.Bucket }); !ok || u.Unwrap() != counting {
		t.Fatal("Unwrap")
	}
}

// TestConformanceOverAStreamingStore: over a driver that streams and
// lists, the wrapper passes the streaming and listing checks through (the
// race checks do not apply to best effort).
func TestConformanceOverAStreamingStore(t *testing.T) {
	drivertest.Run(t, besteffort.Wrap(mem.New()), drivertest.Options{})
}

// TestWrapKeepsAbilities: the wrapper has exactly the optional interfaces
// of the bucket it wraps, each reaching it.
func TestWrapKeepsAbilities(t *testing.T) {
	wrapcheck.Check(t, "bucket", func(_ *testing.T, in driver.Bucket) driver.Bucket { return besteffort.Wrap(in) })
}
