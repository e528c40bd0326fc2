//go:build unix

package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/file"
	"github.com/mushroomdb/bucketlease/internal/objects"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// TestHoldHandsTheEpochToItsCommand: the command under hold sees
// BUCKETLEASE_EPOCH, the epoch of the lease it runs under (the one in the
// record, the one show prints), and the next holder's is greater, after a
// release and after the lease object was deleted.
func TestHoldHandsTheEpochToItsCommand(t *testing.T) {
	u, _ := fileURL(t)
	epochOf := func(how string) uint64 {
		t.Helper()
		out, errOut, code := runCLI(t, nil, "hold", u, "--ttl", "6s", "--", "sh", "-c",
			`echo "$BUCKETLEASE_EPOCH $BUCKETLEASE_KEY"`)
		if code != 0 {
			t.Fatalf("%s: hold exit %d: %s", how, code, errOut)
		}
		f := strings.Fields(out)
		if len(f) != 2 || f[1] != "LEASE" {
			t.Fatalf("%s: the command printed %q, want its epoch and key LEASE", how, out)
		}
		e, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil || e == 0 {
			t.Fatalf("%s: BUCKETLEASE_EPOCH=%q", how, f[0])
		}
		if !strings.Contains(errOut, "epoch "+f[0]+":") {
			t.Errorf("%s: hold's own lines do not name epoch %s:\n%s", how, f[0], errOut)
		}
		if s := showJSONOf(t, u); s.Epoch != e {
			t.Errorf("%s: show --json says epoch %d after the release, want %d kept", how, s.Epoch, e)
		}
		return e
	}
	first := epochOf("first hold")
	second := epochOf("after a release")
	if second <= first {
		t.Fatalf("epoch %d after a release, not greater than %d", second, first)
	}
	// An operator, or a sync tool, deletes the lease object.
	if err := os.Remove(filepath.Join(strings.TrimPrefix(u, "file://"), "LEASE")); err != nil {
		t.Fatal(err)
	}
	third := epochOf("after the lease object was deleted")
	if third <= second {
		t.Fatalf("epoch %d after a delete, not greater than %d", third, second)
	}
	out, _, _ := runCLI(t, nil, "show", u)
	if !strings.Contains(out, "epoch") || !strings.Contains(out, strconv.FormatUint(third, 10)) {
		t.Errorf("show does not print the epoch %d:\n%s", third, out)
	}
}

// TestPutStampsTheEpoch: an object stored by "bucketlease put KEY" inside
// hold carries the epoch hold handed its command, and one stored by "put
// URL KEY" on its own (which takes a lease of its own) that lease's, a
// greater one; both name their instance.
func TestPutStampsTheEpoch(t *testing.T) {
	u, dir := fileURL(t)
	b, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !b.Capabilities().Metadata {
		t.Skip("this file system keeps no extended attributes, so the file driver stamps nothing")
	}
	work := t.TempDir()
	cmd := exec.Command(binary, "hold", u, "--ttl", "6s", "--instance-id", "host-a", "--", "sh", "-c",
		`echo "$BUCKETLEASE_EPOCH" > epoch; echo inside | "$BL" put chunks/inside > /dev/null`)
	cmd.Dir, cmd.Env = work, append(cleanEnv(), "BL="+binary)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hold: %v\n%s", err, out)
	}
	handed, _ := os.ReadFile(filepath.Join(work, "epoch"))
	if _, errOut, code := runCLI(t, nil, "put", u, "chunks/alone", "--instance-id", "host-b", "--", "echo", "alone"); code != 0 {
		t.Fatalf("put URL: exit %d: %s", code, errOut)
	}
	stampOf := func(key string) admin.Stamp {
		t.Helper()
		_, a, err := objects.ReadAll(context.Background(), b, key, 1<<10, driver.GetOptions{Metadata: true})
		if err != nil {
			t.Fatal(err)
		}
		md := a.Metadata
		st, ok := admin.StampOf(md)
		if !ok {
			t.Fatalf("%s carries no stamp: %v", key, md)
		}
		return st
	}
	inside, alone := stampOf("chunks/inside"), stampOf("chunks/alone")
	if strconv.FormatUint(inside.Epoch, 10) != strings.TrimSpace(string(handed)) || inside.Instance != "host-a" {
		t.Errorf("put inside hold stamped %+v; hold handed its command epoch %q as host-a", inside, handed)
	}
	if alone.Epoch <= inside.Epoch || alone.Instance != "host-b" {
		t.Errorf("put URL stamped %+v, want host-b with an epoch over %d", alone, inside.Epoch)
	}
}
