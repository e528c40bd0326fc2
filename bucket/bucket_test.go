package bucket_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/mem"
	"github.com/mushroomdb/bucketlease/internal/objects"
)

func TestKeysAreRelativeToThePrefix(t *testing.T) {
	ctx := context.Background()
	d := mem.New()
	b := bucket.New(d, "/db1/")
	if got := b.Prefix(); got != "db1" {
		t.Fatalf("Prefix() = %q, want db1", got)
	}
	if _, err := b.Put(ctx, "chunks/1", []byte("one"), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Put(ctx, "db10/chunks/1", []byte("other"), driver.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	data, _, err := objects.ReadAll(ctx, d, "db1/chunks/1", 10, driver.GetOptions{})
	if err != nil || string(data) != "one" {
		t.Fatalf("the driver's db1/chunks/1 = %q, %v; want one", data, err)
	}
	var keys []string
	for o, err := range b.List(ctx, "") {
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, o.Key)
	}
	if !slices.Equal(keys, []string{"chunks/1"}) {
		t.Fatalf("List = %q, want [chunks/1] (relative, and nothing of db10)", keys)
	}
}

func TestConditionsAreKept(t *testing.T) {
	ctx := context.Background()
	b := bucket.New(mem.New(), "p")
	a1, err := b.Put(ctx, "k", []byte("one"), &bucket.PutOptions{If: bucket.IfAbsent()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(ctx, "k", []byte("two"), &bucket.PutOptions{If: bucket.IfAbsent()}); !errors.Is(err, bucket.ErrPrecondition) {
		t.Fatalf("a second IfAbsent: %v, want ErrPrecondition", err)
	}
	a2, err := b.Put(ctx, "k", []byte("two"), &bucket.PutOptions{If: bucket.IfMatch(a1.Version)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(ctx, "k", []byte("three"), &bucket.PutOptions{If: bucket.IfMatch(a1.Version)}); !errors.Is(err, bucket.ErrPrecondition) {
		t.Fatalf("IfMatch of a replaced version: %v, want ErrPrecondition", err)
	}
	if err := b.Delete(ctx, "k", bucket.IfMatch(a1.Version)); !errors.Is(err, bucket.ErrPrecondition) {
		t.Fatalf("Delete under a stale IfMatch: %v, want ErrPrecondition", err)
	}
	data, a, err := b.ReadAll(ctx, "k", 10)
	if err != nil || string(data) != "two" || a.Version != a2.Version {
		t.Fatalf("ReadAll = %q, %v, %v; want two at %v", data, a.Version, err, a2.Version)
	}
	if err := b.Delete(ctx, "k", bucket.IfMatch(a2.Version)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Get(ctx, "k"); !errors.Is(err, bucket.ErrNotExist) {
		t.Fatalf("Get after Delete: %v, want ErrNotExist", err)
	}
}

func TestGetReturnsMetadataAndModified(t *testing.T) {
	ctx := context.Background()
	b := bucket.New(mem.New(), "")
	md := bucket.Metadata{"epoch": "7"}
	if _, err := b.Put(ctx, "k", []byte("x"), &bucket.PutOptions{Metadata: md}); err != nil {
		t.Fatal(err)
	}
	rc, a, err := b.Get(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	rc.Close()
	if !maps.Equal(a.Metadata, md) || a.Modified.IsZero() {
		t.Fatalf("Get's Attrs = %+v, want metadata %v and a modification time", a, md)
	}
	if _, err := b.Put(ctx, "bad", []byte("x"), &bucket.PutOptions{Metadata: bucket.Metadata{"Bad_Key": "v"}}); !errors.Is(err, bucket.ErrInvalidMetadata) {
		t.Fatalf("invalid metadata: %v, want ErrInvalidMetadata", err)
	}
	if _, _, err := b.Get(ctx, "bad"); !errors.Is(err, bucket.ErrNotExist) {
		t.Fatalf("a write refused for its metadata left an object: %v", err)
	}
}

func TestReadAllRefusesALongerBody(t *testing.T) {
	ctx := context.Background()
	b := bucket.New(mem.New(), "")
	if _, err := b.Put(ctx, "k", []byte("0123456789"), nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.ReadAll(ctx, "k", 9); !errors.Is(err, bucket.ErrTooLarge) || !strings.Contains(err.Error(), "k") {
		t.Fatalf("ReadAll over its limit: %v, want ErrTooLarge naming the key", err)
	}
	if data, _, err := b.ReadAll(ctx, "k", 10); err != nil || len(data) != 10 {
		t.Fatalf("ReadAll at its limit: %d bytes, %v", len(data), err)
	}
}

func TestWriteIsWholeOrAbsent(t *testing.T) {
	ctx := context.Background()
	b := bucket.New(mem.New(), "p")
	body := bytes.Repeat([]byte("x"), 3<<20)
	failing := io.MultiReader(bytes.NewReader(body), iotest.ErrReader(errors.New("producer died")))
	if _, err := b.Write(ctx, "dump", failing, nil); err == nil || !strings.Contains(err.Error(), "producer died") {
		t.Fatalf("Write from a failing reader: %v, want its error", err)
	}
	if _, _, err := b.Get(ctx, "dump"); !errors.Is(err, bucket.ErrNotExist) {
		t.Fatalf("a failed Write left an object: %v", err)
	}
	a, err := b.Write(ctx, "dump", bytes.NewReader(body), &bucket.PutOptions{If: bucket.IfAbsent(), PartSize: 5 << 20})
	if err != nil {
		t.Fatal(err)
	}
	data, got, err := b.ReadAll(ctx, "dump", int64(len(body)))
	if err != nil || !bytes.Equal(data, body) || got.Version != a.Version {
		t.Fatalf("ReadAll after Write: %d bytes at %v, %v; want %d at %v", len(data), got.Version, err, len(body), a.Version)
	}
}

func TestOpenScopesAndCloses(t *testing.T) {
	ctx := context.Background()
	b, err := bucket.Open(ctx, "mem://bucket-open-test/backups/db1")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Prefix() != "backups/db1" || b.Exclusion() != bucket.Conditional {
		t.Fatalf("Open: prefix %q, exclusion %v", b.Prefix(), b.Exclusion())
	}
	if _, err := b.Put(ctx, "k", []byte("v"), nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := objects.ReadAll(ctx, b.Driver(), "backups/db1/k", 10, driver.GetOptions{}); err != nil {
		t.Fatalf("the key under the URL's prefix: %v", err)
	}
	if _, err := bucket.Open(ctx, "nosuch://x/y"); !errors.Is(err, bucket.ErrUnknownScheme) {
		t.Fatalf("an unknown scheme: %v", err)
	}
}
