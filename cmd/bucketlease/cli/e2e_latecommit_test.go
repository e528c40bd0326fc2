//go:build linux

package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/exitcode"
	"github.com/mushroomdb/bucketlease/driver/file"
)

// TestPutRenameHeldListedLateFile: bucketlease put on file:// whose
// commit, the rename that makes its object visible, is held up 8 s in the
// system call (strace's delay injection, on that path only) while an
// operator breaks its lease (break --force --allow-overlap) and another
// holder takes the prefix and writes. The rename lands after the
// takeover: a late write, which list --late names (exit 10). The object's
// body was staged, and its file last modified, before the takeover, so a
// driver that dated it by its mtime would have it written in time and
// list --late would say "No late write".
func TestPutRenameHeldListedLateFile(t *testing.T) {
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("strace is not installed: it holds the rename")
	}
	if err := exec.Command(strace, "-f", "-qq", "-o", "/dev/null", "true").Run(); err != nil {
		t.Skipf("strace cannot trace here (ptrace refused?): %v", err)
	}
	u, dir := fileURL(t)
	fb, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !fb.Capabilities().Metadata {
		t.Skip("this file system keeps no extended attributes, so the file driver stamps nothing for list --late to judge")
	}
	src := filepath.Join(t.TempDir(), "body")
	if err := os.WriteFile(src, bytes.Repeat([]byte("day 3\n"), 1000), 0o644); err != nil {
		t.Fatal(err)
	}
	const key = "chunks/day3"
	a := startProg(t, nil, strace, "-f", "-qq", "-o", "/dev/null", "-P", filepath.Join(dir, "chunks", "day3"),
		"-e", "trace=rename,renameat,renameat2", "-e", "inject=rename,renameat,renameat2:delay_enter=8000000",
		binary, "put", u, key, src, "--ttl", "2s", "--instance-id", "host-a")
	// The rename is held with the key's lock taken: wait for that.
	for deadline := time.Now().Add(eventTimeout); ; {
		if hs, err := fb.LockHolders(key); err == nil && len(hs) > 0 {
			break
		}
		if time.Now().After(deadline) || a.exitWithin(20*time.Millisecond) != -1 {
			t.Fatalf("put never held the lock on %s in its commit", key)
		}
	}
	// host-a renews every two thirds of a second: it may renew between
	// show and break, which then refuses (exit 4) and is tried again.
	for try := 1; ; try++ {
		s := showJSONOf(t, u)
		out, errOut, code := runCLI(t, nil, "break", u, "--version", s.Version, "--force", "--allow-overlap")
		if code == 0 {
			break
		}
		if code != exitcode.Refused || try == 10 {
			t.Fatalf("break --force --allow-overlap: exit %d\n%s%s", code, out, errOut)
		}
	}
	if out, errOut, code := runCLI(t, nil, "put", u, "chunks/day4", src, "--ttl", "2s", "--instance-id", "host-b"); code != 0 {
		t.Fatalf("host-b's put: exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Lstat(filepath.Join(dir, key)); err == nil {
		t.Fatalf("%s was visible before host-b's write: the rename was not held", key)
	}
	code := a.wait()
	if _, err := os.Lstat(filepath.Join(dir, key)); err != nil {
		t.Fatalf("put exited %d and %s is not there (%v): the held rename did not land", code, key, err)
	}
	out, errOut, lcode := runCLI(t, nil, "list", u, "--late")
	if lcode != exitcode.Late || !strings.Contains(out, key) {
		t.Fatalf("list --late after %s landed past host-b's takeover (put exited %d): exit %d, want %d naming it\n%s%s",
			key, code, lcode, exitcode.Late, out, errOut)
	}
}
