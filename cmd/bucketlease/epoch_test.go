//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
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
