//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/exitcode"
)

// TestPutRefusesNestedLeaseKeys: put URL sub/LEASE --overwrite, and a key
// named as a scratch key of sub's lease, are refused (exit 2, naming the
// key and --overwrite-lease-object) while a hold holds the lease of
// URL/sub, which stays as it was: same version, same holder, and the hold
// releases it as its own. With --overwrite-lease-object such a key under a
// prefix nobody holds is written.
func TestPutRefusesNestedLeaseKeys(t *testing.T) {
	u, dir := fileURL(t)
	body := filepath.Join(t.TempDir(), "body")
	if err := os.WriteFile(body, []byte(`{"instance_id":"mallory"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	a := start(t, nil, "hold", u+"/sub", "--ttl", "30s", "--instance-id", "alpha")
	a.waitFor(`acquired`)
	before := showJSONOf(t, u+"/sub")
	if before.Holder != "alpha" || before.State != "fresh" {
		t.Fatalf("the hold's lease: %+v", before)
	}
	for _, key := range []string{"sub/LEASE", "sub/LEASE.acquire-probe-0123456789abcdef"} {
		_, errOut, code := runCLI(t, nil, "put", u, key, body, "--overwrite")
		if code != exitcode.Usage || !strings.Contains(errOut, key) || !strings.Contains(errOut, "--overwrite-lease-object") {
			t.Errorf("put %s --overwrite: exit %d, want %d naming the key and --overwrite-lease-object:\n%s", key, code, exitcode.Usage, errOut)
		}
	}
	if after := showJSONOf(t, u+"/sub"); after.Version != before.Version || after.Holder != "alpha" || after.State != "fresh" {
		t.Errorf("the hold's lease changed: before %+v, after %+v", before, after)
	}
	if _, err := os.Stat(filepath.Join(dir, "sub", "LEASE.acquire-probe-0123456789abcdef")); err == nil {
		t.Errorf("the scratch key was written")
	}
	a.signal(syscall.SIGTERM)
	if code := a.wait(); code != 0 {
		t.Errorf("the hold exited %d, want 0 (released its own lease):\n%s", code, a.output())
	}
	_, errOut, code := runCLI(t, nil, "put", u, "other/LEASE", body, "--overwrite-lease-object")
	if code != 0 {
		t.Errorf("put other/LEASE --overwrite-lease-object: exit %d, want 0:\n%s", code, errOut)
	}
	_, errOut, code = runCLI(t, nil, "put", u, "LEASE", body, "--overwrite-lease-object")
	if code != exitcode.Usage || !strings.Contains(errOut, "the lease object itself") {
		t.Errorf("put LEASE --overwrite-lease-object: exit %d, want %d:\n%s", code, exitcode.Usage, errOut)
	}
}
