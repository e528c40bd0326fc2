//go:build linux

package cli

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// epochFence is docs/cli.md's example of a system outside the bucket that
// checks the epoch: a ledger file that takes an entry only from a holder
// whose epoch is at least the greatest it has seen.
const epochFence = `# fence.sh: append "$1" to ledger, a file outside the bucket, unless a
# holder with a greater epoch has appended to it already.
exec 9>>ledger.lock
flock 9    # the check and the write are one step
seen=$(cat ledger.epoch 2>/dev/null || echo 0)
if [ "$BUCKETLEASE_EPOCH" -lt "$seen" ]; then
  echo "fence.sh: refused: a holder with a greater epoch has written to the ledger" >&2
  exit 75
fi
echo "$BUCKETLEASE_EPOCH" > ledger.epoch
echo "$1" >> ledger
`

// TestDocsEpochSession runs the recipe that hands the epoch to a system
// outside the bucket: two holds in turn append to the ledger, and a late
// write with an older epoch (what a holder paused past its lease sends when
// it wakes) is refused by the ledger, not by the lease.
func TestDocsEpochSession(t *testing.T) {
	doc, err := os.ReadFile(docsFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(doc, []byte("```sh\n"+epochFence+"```\n")) {
		t.Fatalf("%s does not show fence.sh as this test runs it:\n%s", docsFile, epochFence)
	}
	u, _ := fileURL(t)
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "fence.sh"), []byte(epochFence), 0o644); err != nil {
		t.Fatal(err)
	}
	s := newSession(u, "file:///var/tmp/bl-doc/db3")
	for _, what := range []string{"backup 1", "backup 2"} {
		args := []string{"hold", u, "--ttl", "6s", "--", "sh", "fence.sh", what}
		s.cmd(append([]string{"bucketlease"}, args...), "")
		var out bytes.Buffer
		errOut, code := runTo(t, work, &out, nil, args...)
		s.WriteString(out.String() + errOut)
		s.exit(code)
		if code != 0 {
			t.Fatalf("hold -- sh fence.sh %q: exit %d", what, code)
		}
	}
	late := exec.Command("sh", "fence.sh", "a late write")
	late.Dir, late.Env = work, append(cleanEnv(), "BUCKETLEASE_EPOCH=1")
	out, err := late.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 75 {
		t.Fatalf("the late write: %v, %s; want exit 75", err, out)
	}
	s.WriteString("$ BUCKETLEASE_EPOCH=1 sh fence.sh 'a late write'\n")
	s.Write(out)
	s.exit(ee.ExitCode())
	s.cmd([]string{"cat", "ledger"}, "")
	ledger, err := os.ReadFile(filepath.Join(work, "ledger"))
	if err != nil {
		t.Fatal(err)
	}
	if string(ledger) != "backup 1\nbackup 2\n" {
		t.Fatalf("the ledger holds %q", ledger)
	}
	s.Write(ledger)
	checkSession(t, s)
}
