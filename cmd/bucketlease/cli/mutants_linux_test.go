//go:build linux

package cli

import (
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestWatchdogMutantsHoldKilledStopsTheCommandAtOnce: when hold dies
// (SIGKILL), nobody renews the lease any more, and the command and what it
// started are killed at once, not when the fence deadline comes (40 s away
// here). In a PID namespace the kernel does it; without one
// (--pid-namespace=false, as where none is allowed), which this test runs,
// the watchdog does, when hold's end of the control pipe closes.
// TestWatchdogKilledHold checks only that nothing is written after the
// deadline. (Mutant watchdog-hold-gone-ignored.)
func TestWatchdogMutantsHoldKilledStopsTheCommandAtOnce(t *testing.T) {
	u, _ := fileURL(t)
	work := t.TempDir()
	ticks, pidFile := filepath.Join(work, "ticks"), filepath.Join(work, "pid")
	script := fmt.Sprintf(`sh -c '%s' & wait`, tickWriter(ticks, pidFile))
	a := start(t, nil, "hold", u, "--ttl", "60s", "--instance-id", "alpha", "--pid-namespace=false", "--", "sh", "-c", script)
	waitTicks(t, ticks, 5)
	writer := pidFrom(t, pidFile)
	t.Cleanup(func() { _ = syscall.Kill(writer, syscall.SIGKILL) })

	a.signal(syscall.SIGKILL)
	// Timed from the signal, not from a.wait, which returns only once the
	// command's end of hold's stdout has closed.
	killed := time.Now()
	const bound = 15 * time.Second // generous for a loaded machine; the deadline is 40 s away
	for time.Since(killed) < bound && alive(writer) {
		time.Sleep(20 * time.Millisecond)
	}
	if alive(writer) {
		t.Fatalf("the command's child (pid %d) still runs %v after hold was killed", writer, bound)
	}
	a.wait()
}
