package lease_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/clock"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/mem"
	"github.com/mushroomdb/bucketlease/internal/objects"
	"github.com/mushroomdb/bucketlease/lease"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// metadataOf reads key from b and returns the metadata its Get returned.
func metadataOf(t *testing.T, b driver.Bucket, key string) driver.Metadata {
	t.Helper()
	_, a, err := objects.ReadAll(context.Background(), b, key, 64<<20, driver.GetOptions{Metadata: true})
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	return a.Metadata
}

// TestBucketStampsEveryWrite: a Put and a streamed write of several parts
// through Lease.Bucket carry the lease's epoch and instance, with the
// caller's own metadata; the next holder's objects carry its greater
// epoch.
func TestBucketStampsEveryWrite(t *testing.T) {
	ctx := context.Background()
	b := mem.New()
	l, err := lease.Acquire(ctx, bucket.New(b, "db1"), opts("host-a", clock.System{}, nil))
	if err != nil {
		t.Fatal(err)
	}
	want, ok := l.Stamp()
	if !ok || want.Epoch != l.Epoch() || want.Instance != "host-a" {
		t.Fatalf("Stamp() = %+v, %t; want epoch %d, instance host-a, stamped", want, ok, l.Epoch())
	}
	fb := l.Bucket().Driver()
	own := driver.Metadata{"tool": "pgdump"}
	if _, err := fb.Put(ctx, "chunks/1", []byte("one"), driver.PutOptions{If: driver.IfAbsent(), Metadata: own}); err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("x"), 2*driver.MinPartSize+1)
	if _, err := fb.PutStream(ctx, "chunks/2", bytes.NewReader(big), driver.PutOptions{If: driver.IfAbsent()},
		&driver.StreamOptions{PartSize: driver.MinPartSize}); err != nil {
		t.Fatal(err)
	}
	for key, extra := range map[string]driver.Metadata{"db1/chunks/1": {"tool": "pgdump"}, "db1/chunks/2": nil} {
		md := metadataOf(t, b, key)
		got, ok := admin.StampOf(md)
		if !ok || got != want {
			t.Errorf("%s: stamp %+v (%t), want %+v; metadata %v", key, got, ok, want, md)
		}
		for k, v := range extra {
			if md[k] != v {
				t.Errorf("%s: the caller's %s=%q is %q", key, k, v, md[k])
			}
		}
	}
	l.Release(ctx)

	next, err := lease.Acquire(ctx, bucket.New(b, "db1"), opts("host-b", clock.System{}, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer next.Release(ctx)
	if _, err := next.Bucket().Driver().Put(ctx, "chunks/3", []byte("three"), driver.PutOptions{If: driver.IfAbsent()}); err != nil {
		t.Fatal(err)
	}
	if got, _ := admin.StampOf(metadataOf(t, b, "db1/chunks/3")); got.Epoch <= want.Epoch || got.Instance != "host-b" {
		t.Errorf("the next holder's object: %+v, want an epoch over %d by host-b", got, want.Epoch)
	}
}

// TestBucketWithoutMetadataSaysSo: on a driver that keeps no metadata,
// Stamp says the objects are not stamped, and writes work unstamped.
func TestBucketWithoutMetadataSaysSo(t *testing.T) {
	ctx := context.Background()
	b := noMetadata{mem.New()}
	l, err := lease.Acquire(ctx, bucket.New(b, "db1"), opts("a", clock.System{}, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	if _, ok := l.Stamp(); ok {
		t.Error("Stamp says objects are stamped on a driver that keeps no metadata")
	}
	if _, err := l.Bucket().Driver().Put(ctx, "k", []byte("v"), driver.PutOptions{If: driver.IfAbsent()}); err != nil {
		t.Fatal(err)
	}
	if _, ok := admin.StampOf(metadataOf(t, b.Bucket, "db1/k")); ok {
		t.Error("an object is stamped though the lease's driver declares no metadata")
	}
}

// noMetadata is a mem bucket that declares no metadata.
type noMetadata struct{ *mem.Bucket }

func (n noMetadata) Capabilities() driver.Capabilities {
	c := n.Bucket.Capabilities()
	c.Metadata, c.ListMetadata = false, false
	return c
}

// TestRefusedWriteIsNotStamped: a write that the fence refuses, and one
// whose condition the service refuses, leave no stamp behind.
func TestRefusedWriteIsNotStamped(t *testing.T) {
	ctx := context.Background()
	b := mem.New()
	if _, err := b.Put(ctx, "db1/k", []byte("before"), driver.PutOptions{If: driver.IfAbsent()}); err != nil {
		t.Fatal(err)
	}
	l, err := lease.Acquire(ctx, bucket.New(b, "db1"), opts("a", clock.System{}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Bucket().Driver().Put(ctx, "k", []byte("after"), driver.PutOptions{If: driver.IfAbsent()}); !errors.Is(err, driver.ErrPrecondition) {
		t.Fatalf("IfAbsent over an object: %v", err)
	}
	l.Release(ctx)
	if _, err := l.Bucket().Driver().Put(ctx, "j", []byte("late"), driver.PutOptions{}); !errors.Is(err, lease.ErrReleased) {
		t.Fatalf("a write after Release: %v", err)
	}
	if _, ok := admin.StampOf(metadataOf(t, b, "db1/k")); ok {
		t.Error("a refused write stamped the object it did not replace")
	}
	if _, _, err := b.Get(ctx, "db1/j", driver.GetOptions{}); !errors.Is(err, driver.ErrNotExist) {
		t.Errorf("a write refused by the fence: %v", err)
	}
}

// TestStampedInstance: every instance id the lease accepts is carried in
// metadata the portable rule allows, and plain ids unchanged.
func TestStampedInstance(t *testing.T) {
	for id, want := range map[string]string{
		"host-a":                 "host-a",
		"hôte":                   "h%C3%B4te",
		" padded":                "%20padded",
		strings.Repeat("é", 128): "sha256:",
	} {
		got := admin.StampedInstance(id)
		if !strings.HasPrefix(got, want) || (want != "sha256:" && got != want) {
			t.Errorf("StampedInstance(%q) = %q, want %q", id, got, want)
		}
		if err := (admin.Stamp{Epoch: 1, Instance: got}).Metadata().Validate(); err != nil {
			t.Errorf("StampedInstance(%q) = %q: %v", id, got, err)
		}
	}
	if _, ok := admin.StampOf(driver.Metadata{"bucketleaseepoch": "0"}); ok {
		t.Error("epoch 0 read as a stamp")
	}
	if _, ok := admin.StampOf(driver.Metadata{"bucketleaseepoch": "x1"}); ok {
		t.Error("a malformed epoch read as a stamp")
	}
}
