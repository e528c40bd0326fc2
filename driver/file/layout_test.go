//go:build unix

package file_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/file"
	"github.com/mushroomdb/bucketlease/internal/objects"
)

// readObject reads key through the driver.
func readObject(t *testing.T, b driver.Bucket, key string) ([]byte, driver.Version) {
	t.Helper()
	data, v, err := objects.ReadAll(context.Background(), b, key, 1<<30, driver.GetOptions{})
	if err != nil {
		t.Fatalf("Get %q: %v", key, err)
	}
	return data, v.Version
}

// listed returns the Object that List reports for key.
func listed(t *testing.T, b *file.Bucket, key string) driver.Object {
	t.Helper()
	for o, err := range b.List(context.Background(), key) {
		if err != nil {
			t.Fatalf("List %q: %v", key, err)
		}
		if o.Key == key {
			return o
		}
	}
	t.Fatalf("List %q does not list it", key)
	return driver.Object{}
}

// TestObjectsAreByteExactOnDisk: the file at dir/KEY holds exactly the
// bytes written, by Put and by PutStream, whatever they are (a body that
// begins like the header earlier versions wrote included), and Get and List
// agree with it (no file begins with a "bucketlease-object v1 VERSION"
// line, as the earlier layout's did).
func TestObjectsAreByteExactOnDisk(t *testing.T) {
	dir := t.TempDir()
	b, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	big := bytes.Repeat([]byte("0123456789abcdef\x00\xff\n"), (6<<20)/19) // more than one part
	bodies := map[string][]byte{
		"empty":             {},
		"dumps/db1.sql":     []byte("-- PostgreSQL database dump\nCREATE TABLE t (x int);\n"),
		"binary":            {0, 1, 2, 0xff, '\n', 0},
		"looks-like-legacy": []byte("bucketlease-object v1 0123456789abcdef0123456789abcdef\nthe rest\n"),
		"big":               big,
	}
	for key, body := range bodies {
		for _, how := range []string{"put", "stream"} {
			k := how + "/" + key
			var v driver.Attrs
			if how == "put" {
				v, err = b.Put(ctx, k, body, driver.PutOptions{If: driver.IfAbsent()})
			} else {
				v, err = b.PutStream(ctx, k, bytes.NewReader(body), driver.PutOptions{If: driver.IfAbsent()}, &driver.StreamOptions{PartSize: driver.MinPartSize})
			}
			if err != nil {
				t.Fatalf("%s %q: %v", how, k, err)
			}
			onDisk, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(k)))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(onDisk, body) {
				t.Errorf("%s %q: the file holds %d bytes beginning %q, not the %d bytes written", how, k, len(onDisk), head(onDisk), len(body))
			}
			got, gv := readObject(t, b, k)
			if !bytes.Equal(got, body) || gv != v.Version {
				t.Errorf("%s %q: Get returns %d bytes beginning %q at version %q, want the %d bytes written at %q", how, k, len(got), head(got), gv, len(body), v.Version)
			}
			if o := listed(t, b, k); o.Size != int64(len(body)) || o.Version != v.Version {
				t.Errorf("%s %q: List says size %d version %q, want %d %q", how, k, o.Size, o.Version, len(body), v.Version)
			}
			// A rewrite is byte-exact too, and the old version is refused.
			v2, err := b.Put(ctx, k, append([]byte("2:"), body...), driver.PutOptions{If: driver.IfMatch(v.Version)})
			if err != nil {
				t.Fatalf("rewriting %q: %v", k, err)
			}
			if onDisk, _ := os.ReadFile(filepath.Join(dir, filepath.FromSlash(k))); !bytes.Equal(onDisk, append([]byte("2:"), body...)) {
				t.Errorf("rewritten %q: the file begins %q", k, head(onDisk))
			}
			if _, err := b.Put(ctx, k, body, driver.PutOptions{If: driver.IfMatch(v.Version)}); !errors.Is(err, driver.ErrPrecondition) {
				t.Errorf("IfMatch of %q's replaced version: %v, want ErrPrecondition", k, err)
			}
			if _, gv := readObject(t, b, k); gv != v2.Version {
				t.Errorf("%q reads at version %q after the rewrite, want %q", k, gv, v2.Version)
			}
		}
	}
}

func head(b []byte) []byte { return b[:min(len(b), 40)] }

// legacyObject is what earlier versions of the driver wrote: a header line
// with the version, then the body.
func legacyObject(v string, body string) []byte {
	return []byte("bucketlease-object v1 " + v + "\n" + body)
}

// TestLegacyObjectsReadBack: a file written by an earlier version of the
// driver (header line, then the body) reads as its body with the version
// in its header, and the next write stores it byte-exact.
func TestLegacyObjectsReadBack(t *testing.T) {
	dir := t.TempDir()
	b, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const old = "0123456789abcdef0123456789abcdef"
	if err := os.MkdirAll(filepath.Join(dir, "dumps"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "dumps", "db1.sql"), legacyObject(old, "CREATE TABLE t;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "empty"), legacyObject(old, ""), 0o644); err != nil {
		t.Fatal(err)
	}
	if data, v := readObject(t, b, "dumps/db1.sql"); string(data) != "CREATE TABLE t;\n" || v != old {
		t.Fatalf("legacy object reads %q at %q, want %q at %q", data, v, "CREATE TABLE t;\n", old)
	}
	if data, v := readObject(t, b, "empty"); len(data) != 0 || v != old {
		t.Fatalf("empty legacy object reads %q at %q", data, v)
	}
	if o := listed(t, b, "dumps/db1.sql"); o.Size != int64(len("CREATE TABLE t;\n")) || o.Version != old {
		t.Fatalf("List of a legacy object: size %d version %q", o.Size, o.Version)
	}
	if _, err := b.Put(ctx, "dumps/db1.sql", []byte("x"), driver.PutOptions{If: driver.IfAbsent()}); !errors.Is(err, driver.ErrPrecondition) {
		t.Fatalf("IfAbsent over a legacy object: %v, want ErrPrecondition", err)
	}
	if _, err := b.Put(ctx, "dumps/db1.sql", []byte("x"), driver.PutOptions{If: driver.IfMatch(objects.FakeVersion(old))}); !errors.Is(err, driver.ErrPrecondition) {
		t.Fatalf("IfMatch of a made-up version over a legacy object: %v, want ErrPrecondition", err)
	}
	v, err := b.Put(ctx, "dumps/db1.sql", []byte("CREATE TABLE u;\n"), driver.PutOptions{If: driver.IfMatch(old)})
	if err != nil {
		t.Fatalf("IfMatch of a legacy object's version: %v", err)
	}
	if onDisk, _ := os.ReadFile(filepath.Join(dir, "dumps", "db1.sql")); string(onDisk) != "CREATE TABLE u;\n" {
		t.Fatalf("after a write over a legacy object the file holds %q", onDisk)
	}
	if data, gv := readObject(t, b, "dumps/db1.sql"); string(data) != "CREATE TABLE u;\n" || gv != v.Version {
		t.Fatalf("after a write over a legacy object: %q at %q, want %q at %q", data, gv, "CREATE TABLE u;\n", v.Version)
	}
	if err := b.Delete(ctx, "empty", driver.IfMatch(old)); err != nil {
		t.Fatalf("conditional delete of a legacy object: %v", err)
	}
}

// TestCopiedInFileIsAnObject: a file a person put in the directory (no
// record names it) reads as an object with a version derived from it;
// IfAbsent on it is refused; and a file changed behind the driver's back
// (edited in place, or replaced by a copy) reads at a new version, so a
// condition naming the version read before never holds.
func TestCopiedInFileIsAnObject(t *testing.T) {
	dir := t.TempDir()
	b, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p := filepath.Join(dir, "restore.sql")
	if err := os.WriteFile(p, []byte("copied in\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	data, v := readObject(t, b, "restore.sql")
	if string(data) != "copied in\n" || v == "" {
		t.Fatalf("a copied-in file reads %q at %q", data, v)
	}
	if o := listed(t, b, "restore.sql"); o.Size != int64(len("copied in\n")) || o.Version != v {
		t.Fatalf("List of a copied-in file: size %d version %q, want %d %q", o.Size, o.Version, len("copied in\n"), v)
	}
	if _, err := b.Put(ctx, "restore.sql", []byte("x"), driver.PutOptions{If: driver.IfAbsent()}); !errors.Is(err, driver.ErrPrecondition) {
		t.Fatalf("IfAbsent over a copied-in file: %v, want ErrPrecondition", err)
	}
	v1, err := b.Put(ctx, "restore.sql", []byte("written by the driver\n"), driver.PutOptions{If: driver.IfMatch(v)})
	if err != nil {
		t.Fatalf("IfMatch of a copied-in file's version: %v", err)
	}
	// A person edits the object in place: same inode, other bytes.
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(f, "edited by hand\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	data, v2 := readObject(t, b, "restore.sql")
	if string(data) != "written by the driver\nedited by hand\n" || v2 == v1.Version || v2 == "" {
		t.Fatalf("an object edited in place reads %q at %q (the driver wrote version %q): its version must change", data, v2, v1.Version)
	}
	if _, err := b.Put(ctx, "restore.sql", []byte("x"), driver.PutOptions{If: driver.IfMatch(v1.Version)}); !errors.Is(err, driver.ErrPrecondition) {
		t.Fatalf("IfMatch of the version from before a hand edit: %v, want ErrPrecondition", err)
	}
	// A person copies another file over it.
	if err := os.WriteFile(p+".new", []byte("another\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(p+".new", p); err != nil {
		t.Fatal(err)
	}
	data, v3 := readObject(t, b, "restore.sql")
	if string(data) != "another\n" || v3 == v2 || v3 == v1.Version {
		t.Fatalf("a file moved over an object reads %q at %q (before: %q, %q)", data, v3, v1.Version, v2)
	}
	if err := b.Delete(ctx, "restore.sql", driver.IfMatch(v2)); !errors.Is(err, driver.ErrPrecondition) {
		t.Fatalf("conditional delete with the version from before the copy: %v, want ErrPrecondition", err)
	}
	if err := b.Delete(ctx, "restore.sql", driver.IfMatch(v3)); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, ".bucketlease", "versions")); len(ents) != 0 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("the deleted key's version record is left: %s", strings.Join(names, ", "))
	}
}

// TestNestedBucketsAgreeOnVersions: file:///dir and file:///dir/db1 see
// the same files (bucketlease list file:///var/backups reads the lease of
// file:///var/backups/db1 as db1/LEASE); an object reads at one version
// whichever of them wrote it and whichever reads it.
func TestNestedBucketsAgreeOnVersions(t *testing.T) {
	dir := t.TempDir()
	outer, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	inner, err := file.Open(filepath.Join(dir, "db1"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	v1, err := inner.Put(ctx, "LEASE", []byte("one"), driver.PutOptions{If: driver.IfAbsent()})
	if err != nil {
		t.Fatal(err)
	}
	if data, v := readObject(t, outer, "db1/LEASE"); string(data) != "one" || v != v1.Version {
		t.Fatalf("the outer bucket reads db1/LEASE as %q at %q; the inner one wrote %q at %q", data, v, "one", v1.Version)
	}
	if o := listed(t, outer, "db1/LEASE"); o.Version != v1.Version {
		t.Fatalf("the outer bucket lists db1/LEASE at %q, want %q", o.Version, v1.Version)
	}
	v2, err := outer.Put(ctx, "db1/LEASE", []byte("two"), driver.PutOptions{If: driver.IfMatch(v1.Version)})
	if err != nil {
		t.Fatalf("the outer bucket's IfMatch of the inner one's version: %v", err)
	}
	if data, v := readObject(t, inner, "LEASE"); string(data) != "two" || v != v2.Version {
		t.Fatalf("the inner bucket reads LEASE as %q at %q; the outer one wrote %q at %q", data, v, "two", v2.Version)
	}
	if _, err := inner.Put(ctx, "LEASE", []byte("x"), driver.PutOptions{If: driver.IfMatch(v1.Version)}); !errors.Is(err, driver.ErrPrecondition) {
		t.Fatalf("the inner bucket's IfMatch of the replaced version: %v, want ErrPrecondition", err)
	}
}
