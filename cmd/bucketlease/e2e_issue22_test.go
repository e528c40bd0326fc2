//go:build unix

package main

import (
	"strings"
	"testing"
)

// TestMemRefusedAcrossProcesses (issue 22, item 2): a mem:// bucket lives
// in one process, so hold, break and probe refuse it (exit 2) instead of
// reporting conditional exclusion between processes that cannot see each
// other; the command after -- never runs. The demo still uses memory.
func TestMemRefusedAcrossProcesses(t *testing.T) {
	for _, args := range [][]string{
		{"hold", "mem://b/p"},
		{"hold", "mem://b/p", "--wait", "--", "echo", "RAN"},
		{"break", "mem://b/p", "--version", "0123"},
		{"probe", "mem://b/p"},
	} {
		out, errOut, code := runCLI(t, nil, args...)
		if code != exitUsage || !strings.Contains(errOut, "mem:// is a bucket inside this one process") {
			t.Errorf("%v: exit %d, stderr %q; want exit %d naming mem:// as in-process", args, code, errOut, exitUsage)
		}
		if strings.Contains(out+errOut, "RAN") || strings.Contains(errOut, "acquired") {
			t.Errorf("%v: ran or acquired: %q %q", args, out, errOut)
		}
	}
	if out, _, code := runCLI(t, nil, "demo"); code != 0 || !strings.Contains(out, "TOOK OVER") {
		t.Errorf("demo: exit %d", code)
	}
}
