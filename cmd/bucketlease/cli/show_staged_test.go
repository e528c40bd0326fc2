//go:build unix

package cli

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestShowListsKilledPutsStagedFile: a put on
// file:// killed by SIGKILL in the middle of its body leaves its staged
// file; show lists it under pending, with its key and the process that is
// gone, in text and --json; the next put (a takeover, as a rerun would be)
// removes it, and show then lists nothing pending.
func TestShowListsKilledPutsStagedFile(t *testing.T) {
	u, dir := fileURL(t)
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	p := start(t, nil, "put", u, "dumps/db1.sql", fifo, "--ttl", "2s", "--part-size", "5MiB", "--concurrency", "1")
	w := openFifoWriter(t, fifo, p)
	defer w.Close()
	chunk := make([]byte, 6<<20)
	rand.Read(chunk)
	if _, err := w.Write(chunk); err != nil {
		t.Fatal(err)
	}
	for i := 0; len(staged(t, dir)) == 0; i++ { // the first part is being written
		if i > 600 {
			t.Fatal("nothing staged after 6 MiB")
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.signal(syscall.SIGKILL)
	p.wait()
	w.Close()
	if len(staged(t, dir)) == 0 {
		t.Fatal("the killed put left nothing staged")
	}
	out, errOut, code := runCLI(t, nil, "show", u)
	if code != 0 || !strings.Contains(out, "pending   1 upload under the bucket") || !strings.Contains(out, "dumps/db1.sql, started ") ||
		!strings.Contains(out, "which is gone; the next write removes it") {
		t.Errorf("show after a killed put: exit %d: %s\n%s", code, errOut, out)
	}
	if s := showJSONOf(t, u); s.Pending == nil || !s.Pending.Available || len(s.Pending.Uploads) != 1 || s.Pending.Uploads[0].Key != "dumps/db1.sql" {
		t.Errorf("show --json after a killed put: %+v", s.Pending)
	}
	src := filepath.Join(t.TempDir(), "body")
	if err := os.WriteFile(src, []byte("next\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runCLI(t, nil, "put", u, "dumps/db2.sql", src, "--wait"); code != 0 {
		t.Fatalf("the next put: exit %d: %s", code, errOut)
	}
	if s := staged(t, dir); len(s) != 0 {
		t.Errorf("after the next put, staged: %v", s)
	}
	if out, _, _ := runCLI(t, nil, "show", u); !strings.Contains(out, "pending   none") {
		t.Errorf("show after the sweep:\n%s", out)
	}
}
