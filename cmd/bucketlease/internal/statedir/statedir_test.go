package statedir

import (
	"os"
	"path/filepath"
	"testing"

	_ "github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/drivers"
	"github.com/mushroomdb/bucketlease/internal/location"
)

// stateDirOf is hold's state directory for rawURL under base.
func stateDirOf(t *testing.T, base, rawURL string) string {
	t.Helper()
	loc, err := location.Parse(rawURL)
	if err != nil {
		t.Fatalf("%s: %v", rawURL, err)
	}
	dir, err := For(func(string) string { return "" }, base, loc)
	if err != nil {
		t.Fatalf("%s: %v", rawURL, err)
	}
	return dir
}

// TestStateDirSpellings: two spellings of one prefix (a trailing slash,
// parameters at their default or in another order, a region, a host's
// case) share a state directory; two prefixes, buckets or endpoints never
// do.
func TestStateDirSpellings(t *testing.T) {
	base := t.TempDir()
	same := [][]string{
		{"s3://bkt/db1", "s3://bkt/db1/", "s3://bkt//db1", "s3://bkt/db1?region=eu-west-1&path_style=false",
			"s3://bkt/db1/?path_style=0&region=us-east-1", "S3://bkt/db1"},
		{"s3://bkt/db1?endpoint=http://minio:9000", "s3://bkt/db1?endpoint=HTTP://Minio:9000/&path_style=true"},
		{"minio://host:9000/bkt/db1", "minio://HOST:9000/bkt/db1/?tls=true", "minio://host:9000/bkt/db1?region=x&tls=1"},
		{"gs://bkt/db1", "gs://bkt/db1/"},
		{"azblob://ctr/db1?account=acct", "azblob://ctr/db1/?account=acct", "azblob://ctr/db1?endpoint=https://acct.blob.core.windows.net/"},
		{"file:///srv/b/db1", "file:///srv/b/db1/", "file:///srv/b/./db1?trust_network_flock=false", "file://localhost/srv/b/db1"},
	}
	seen := map[string]string{}
	for _, group := range same {
		want := stateDirOf(t, base, group[0])
		for _, u := range group[1:] {
			if got := stateDirOf(t, base, u); got != want {
				t.Errorf("%s has state directory %s, %s has %s: one prefix, two directories", group[0], want, u, got)
			}
		}
		seen[want] = group[0]
	}
	different := []string{
		"s3://bkt/db2", "s3://bkt/db1/sub", "s3://bkt/db", "s3://bkt", "s3://other/db1",
		"s3://bkt/db1?endpoint=http://minio:9001", "minio://host:9000/bkt/db2", "minio://host:9000/bkt/db1?tls=false",
		"minio://other:9000/bkt/db1", "gs://bkt/db2", "azblob://ctr/db1?account=other", "file:///srv/b/db2",
		"file:///srv/b", "mem://bkt/db1", "mem://BKT/db1", "r2://0123abcd/bkt/db1",
	}
	for _, u := range different {
		dir := stateDirOf(t, base, u)
		if prev, dup := seen[dir]; dup {
			t.Errorf("%s and %s share state directory %s: two places, one directory", prev, u, dir)
		}
		seen[dir] = u
	}
}

// TestStateDirKeepsTheOldOne: a state directory named as an earlier
// version named it (a hash of the URL as displayed) is renamed to the new
// name, with what it holds, and left alone once the new one exists.
func TestStateDirKeepsTheOldOne(t *testing.T) {
	base := t.TempDir()
	const rawURL = "s3://bkt/db1/?region=eu-west-1"
	old := filepath.Join(base, hashName(rawURL))
	if err := os.MkdirAll(old, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(old, "lease-x.state"), []byte("journal"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := stateDirOf(t, base, rawURL)
	if dir == old {
		t.Fatal("the new name is the old one: the test shows nothing")
	}
	if data, err := os.ReadFile(filepath.Join(dir, "lease-x.state")); err != nil || string(data) != "journal" {
		t.Fatalf("the old state directory's journal was not carried over: %q, %v", data, err)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Fatalf("the old state directory is still there: %v", err)
	}
	// Another spelling's old directory does not replace the new one.
	other := filepath.Join(base, hashName("s3://bkt/db1"))
	if err := os.MkdirAll(other, 0o700); err != nil {
		t.Fatal(err)
	}
	if got := stateDirOf(t, base, "s3://bkt/db1"); got != dir {
		t.Fatalf("state directory %s, want %s", got, dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "lease-x.state")); err != nil {
		t.Fatalf("the new state directory lost its journal: %v", err)
	}
}
