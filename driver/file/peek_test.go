package file

import (
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestDir(t *testing.T) {
	for raw, want := range map[string]string{
		"file:///var/b/":                         "/var/b",
		"file:///var/b?trust_network_flock=true": "/var/b",
		"file:///var/b?other=1":                  "",
		"file://host/var/b":                      "",
		"file:///var/b#x":                        "",
		"file:relative":                          "",
	} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if got := Dir(u); got != want {
			t.Errorf("Dir(%s) = %q, want %q", raw, got, want)
		}
	}
}

func TestAbsentAndKeyDir(t *testing.T) {
	dir := t.TempDir()
	if !Absent(dir, "LEASE") {
		t.Error("Absent: false in an empty directory")
	}
	u := &url.URL{Scheme: "file", Path: dir}
	if _, _, isDir := KeyDir(u, "LEASE"); isDir {
		t.Error("KeyDir: true for a key that does not exist")
	}
	if err := os.WriteFile(filepath.Join(dir, "LEASE"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if Absent(dir, "LEASE") {
		t.Error("Absent: true for a stored key")
	}
	if _, _, isDir := KeyDir(u, "LEASE"); isDir {
		t.Error("KeyDir: true for a file")
	}
	sub := filepath.Join(dir, "sub", "LEASE")
	for _, n := range []string{"c", "a", "b", "d"} {
		if err := os.MkdirAll(filepath.Join(sub, n), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p, names, isDir := KeyDir(u, "sub/LEASE")
	if !isDir || p != sub || len(names) != 3 || !slices.IsSorted(names) {
		t.Errorf("KeyDir = %q, %q, %v; want %q, three sorted names, true", p, names, isDir, sub)
	}
}

func TestPeek(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"LEASE.b", "LEASE.a", "other"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "LEASE.dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	got := Peek(dir, "LEASE.", 1000)
	if len(got) != 2 || got[0].Key != "LEASE.a" || got[1].Key != "LEASE.b" || got[0].ModTime.IsZero() {
		t.Errorf("Peek = %v, want LEASE.a and LEASE.b with their times", got)
	}
	if got := Peek(filepath.Join(dir, "none"), "", 1000); got != nil {
		t.Errorf("Peek of a missing directory = %v", got)
	}
}
