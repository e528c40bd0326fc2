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

// TestSameInstanceIDExits6: a second process with the --instance-id of a
// live hold, hold and put URL alike, exits 6 at once without --wait,
// saying both things the record can mean (another live process with that
// id, or this instance's previous process that died); with --wait it
// exits 6 once it has seen the record renewed. The first hold's lease is
// left as it was.
func TestSameInstanceIDExits6(t *testing.T) {
	u, _ := fileURL(t)
	body := filepath.Join(t.TempDir(), "body")
	if err := os.WriteFile(body, []byte("dump"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := start(t, nil, "hold", u, "--ttl", "6s", "--instance-id", "same")
	a.waitFor(`acquired`)
	before := showJSONOf(t, u)
	for _, args := range [][]string{
		{"hold", u, "--ttl", "6s", "--instance-id", "same", "-E", "9"},
		{"put", u, "dumps/a", body, "--ttl", "6s", "--instance-id", "same"},
	} {
		_, errOut, code := runCLI(t, nil, args...)
		// put looks twice (once to say who holds the lease), so it may
		// see the record renewed in between: then it knows.
		both := strings.Contains(errOut, "previous process") || strings.Contains(errOut, "changed while this process watched it")
		if code != exitcode.InstanceInUse || !strings.Contains(errOut, "another live process") || !both || !strings.Contains(errOut, "--instance-id") {
			t.Errorf("%s without --wait: exit %d, want %d, naming both causes and --instance-id:\n%s", args[0], code, exitcode.InstanceInUse, errOut)
		}
	}
	_, errOut, code := runCLI(t, nil, "put", u, "dumps/b", body, "--ttl", "6s", "--instance-id", "same", "--wait", "--wait-timeout", "120s")
	if code != exitcode.InstanceInUse || !strings.Contains(errOut, "another live process uses this instance id") {
		t.Errorf("put --wait: exit %d, want %d:\n%s", code, exitcode.InstanceInUse, errOut)
	}
	if s := showJSONOf(t, u); s.Holder != "same" || s.State != "fresh" || s.AcquiredAt != before.AcquiredAt {
		t.Errorf("the first hold's lease changed: before %+v, after %+v", before, s)
	}
	a.signal(syscall.SIGTERM)
	if code := a.wait(); code != 0 {
		t.Errorf("the first hold exited %d, want 0:\n%s", code, a.output())
	}
}
