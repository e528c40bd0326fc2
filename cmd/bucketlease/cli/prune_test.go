//go:build unix

package cli

import (
	"crypto/rand"
	"encoding/json"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/exitcode"
)

// killedPut starts a put of key on the file:// URL u with a 2s TTL, feeds
// it part of a body through a FIFO, and kills it with SIGKILL once it has
// staged a file in dir: a writer that died, leaving its staged file and
// its lease, fresh until its TTL ends.
func killedPut(t *testing.T, u, dir, key string) {
	t.Helper()
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	p := start(t, nil, "put", u, key, fifo, "--ttl", "2s", "--part-size", "5MiB", "--concurrency", "1")
	w := openFifoWriter(t, fifo, p)
	defer w.Close()
	chunk := make([]byte, 6<<20)
	rand.Read(chunk)
	if _, err := w.Write(chunk); err != nil {
		t.Fatal(err)
	}
	for i := 0; len(staged(t, dir)) == 0; i++ {
		if i > 600 {
			t.Fatal("nothing staged after 6 MiB")
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.signal(syscall.SIGKILL)
	p.wait()
	if len(staged(t, dir)) == 0 {
		t.Fatal("the killed put left nothing staged")
	}
}

// TestPruneRemovesKilledPutsStagedFile: a put on file:// killed in the
// middle of its body leaves its staged file. prune without --older-than
// is a usage error; with --older-than 1h it keeps the file (too young);
// with 0s it keeps it while the dead put's lease is still fresh (its
// holder may, for all anyone can tell, still commit it); once the lease is
// stale, --dry-run says it would remove it and removes nothing, and prune
// removes it, in text and --json, after which show lists nothing pending.
func TestPruneRemovesKilledPutsStagedFile(t *testing.T) {
	u, dir := fileURL(t)
	killedPut(t, u, dir, "dumps/db1.sql")
	if _, errOut, code := runCLI(t, nil, "prune", u); code != exitcode.Usage || !strings.Contains(errOut, "--older-than") {
		t.Errorf("prune without --older-than: exit %d: %s", code, errOut)
	}
	out, errOut, code := runCLI(t, nil, "prune", u, "--older-than", "1h")
	if code != 0 || !strings.Contains(out, "Kept dumps/db1.sql, started ") || !strings.Contains(out, "less than 1h0m0s") || len(staged(t, dir)) == 0 {
		t.Errorf("prune --older-than 1h: exit %d: %s\n%s", code, errOut, out)
	}
	if s := showJSONOf(t, u); s.State == "fresh" {
		out, errOut, code = runCLI(t, nil, "prune", u, "--older-than", "0s")
		if code != 0 || !strings.Contains(out, "Kept dumps/db1.sql") || !strings.Contains(out, "which may still commit it") || len(staged(t, dir)) == 0 {
			t.Errorf("prune while the dead put's lease is fresh: exit %d: %s\n%s", code, errOut, out)
		}
	}
	for i := 0; showJSONOf(t, u).State != "stale"; i++ {
		if i > 100 {
			t.Fatal("the killed put's lease never went stale")
		}
		time.Sleep(100 * time.Millisecond)
	}
	out, errOut, code = runCLI(t, nil, "prune", u, "--older-than", "0s", "--dry-run")
	if code != 0 || !strings.Contains(out, "Would remove (--dry-run) dumps/db1.sql") || !strings.Contains(out, "LEASE is stale") || len(staged(t, dir)) == 0 {
		t.Errorf("prune --dry-run: exit %d: %s\n%s", code, errOut, out)
	}
	out, errOut, code = runCLI(t, nil, "prune", u, "--older-than", "0s", "--json")
	var j pruneJSON
	if err := json.Unmarshal([]byte(out), &j); err != nil || code != 0 || j.Removed != 1 || len(j.Uploads) != 1 ||
		j.Uploads[0].Key != "dumps/db1.sql" || !j.Uploads[0].Removed || j.Uploads[0].Initiated == "" {
		t.Errorf("prune --json: exit %d, %v: %s\n%s", code, err, errOut, out)
	}
	if s := staged(t, dir); len(s) != 0 {
		t.Errorf("after prune, staged: %v", s)
	}
	if out, _, _ := runCLI(t, nil, "show", u); !strings.Contains(out, "pending   none") {
		t.Errorf("show after prune:\n%s", out)
	}
	if out, errOut, code := runCLI(t, nil, "prune", u, "--older-than", "0s"); code != 0 || !strings.Contains(out, "No pending upload under the bucket.") {
		t.Errorf("prune with nothing pending: exit %d: %s\n%s", code, errOut, out)
	}
}
