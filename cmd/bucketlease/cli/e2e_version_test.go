//go:build unix

package cli

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestVersionFromBuildInfo: a binary built from the checkout with VCS
// stamping prints the version the Go toolchain derived from the commit (a
// pseudo-version naming it) and the commit itself, for both "version" and
// "--version". (A "go install …@vX" binary prints vX from the same build
// information.)
func TestVersionFromBuildInfo(t *testing.T) {
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("no git checkout to stamp: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "bucketlease")
	if out, err := exec.Command("go", "build", "-buildvcs=true", "-o", bin, "..").CombinedOutput(); err != nil {
		t.Fatalf("go build -buildvcs=true: %v\n%s", err, out)
	}
	// Go stamps no VCS information in some checkouts (a git worktree, for
	// one); there is nothing for the command to read then.
	if info, err := exec.Command("go", "version", "-m", bin).Output(); err != nil || !strings.Contains(string(info), "vcs.revision=") {
		t.Skipf("go build -buildvcs=true recorded no vcs.revision in this checkout (%v)", err)
	}
	want := "revision " + strings.TrimSpace(string(head))
	for _, arg := range []string{"version", "--version"} {
		out, err := exec.Command(bin, arg).Output()
		if err != nil {
			t.Fatalf("%s: %v", arg, err)
		}
		s := string(out)
		short := strings.TrimSpace(string(head))[:12]
		if !strings.HasPrefix(s, "bucketlease v") || !strings.Contains(s, "-"+short) ||
			!strings.Contains(s, "(module github.com/mushroomdb/bucketlease, ") || !strings.Contains(s, want) {
			t.Errorf("%s printed %q; want a pseudo-version naming %s, and %q", arg, s, short, want)
		}
	}
	// The control: a binary built without VCS stamping names no revision.
	out, _ := exec.Command(binary, "version").Output()
	if strings.Contains(string(out), "revision") {
		t.Errorf("the test binary, built with GOFLAGS=%q, claims a revision: %q", "-buildvcs=false", out)
	}
}
