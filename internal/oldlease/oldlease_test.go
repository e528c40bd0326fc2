package oldlease_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// oldOnly are functions of package lease that only an old behaviour calls.
var oldOnly = []string{"lease.breakBlind", "lease.(*attempt).releaseOwn"}

// symbols builds testdata/prog, a program that uses the lease, with tags
// and returns its symbol table.
func symbols(t *testing.T, tags string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "prog")
	args := []string{"build", "-o", bin}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	cmd := exec.Command("go", append(args, "./testdata/prog")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command("go", "tool", "nm", bin).Output()
	if err != nil {
		t.Fatalf("go tool nm: %v", err)
	}
	return string(out)
}

// TestShippedBinaryHasNoOldBehaviour: a program as users build it has
// none of the old behaviours' code (each switch is a constant false, so the
// compiler drops what it guards and the linker what only that called);
// built with the negative controls' tag, it has them, which shows that the
// check can see them.
func TestShippedBinaryHasNoOldBehaviour(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program twice")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	shipped := symbols(t, "")
	for _, f := range oldOnly {
		if strings.Contains(shipped, f) {
			t.Errorf("the shipped binary contains %s, which only an old behaviour calls", f)
		}
	}
	withOld := symbols(t, "bucketlease_oldlease")
	for _, f := range oldOnly {
		if !strings.Contains(withOld, f) {
			t.Errorf("negative control: the build with the old behaviours lacks %s; the check cannot see them", f)
		}
	}
}
