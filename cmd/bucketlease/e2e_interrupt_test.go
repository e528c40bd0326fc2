//go:build unix

package main

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestInterruptDuringAcquireLeavesNoLease: hold and put stopped by SIGTERM,
// SIGINT or SIGHUP in their first second or two, while the acquire writes
// the lease object, waits for the service's clock and rewrites it with an
// epoch (about two seconds on file://, whose clock is read at a 2 s
// resolution), exit 128+N and leave no fresh lease behind: the prefix is
// free or released, and another instance takes it at once. A message that
// says the lease was never taken is only printed when nothing was written.
func TestInterruptDuringAcquireLeavesNoLease(t *testing.T) {
	sigs := []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP}
	delays := []time.Duration{150 * time.Millisecond, 600 * time.Millisecond, 1200 * time.Millisecond}
	for i, d := range delays {
		sig := sigs[i%len(sigs)]
		for _, cmd := range []string{"hold", "put"} {
			t.Run(fmt.Sprintf("%s-%s-%v", cmd, sig, d), func(t *testing.T) {
				t.Parallel()
				u, _ := fileURL(t)
				args := []string{"hold", u, "--ttl", "1h", "--instance-id", "alpha", "--", "sleep", "60"}
				if cmd == "put" {
					args = []string{"put", u, "obj", "--ttl", "1h", "--instance-id", "alpha", "--", "sh", "-c", "sleep 60; echo x"}
				}
				p := start(t, nil, args...)
				time.Sleep(d)
				p.signal(sig)
				code := p.wait()
				errOut := p.errOutput()
				// -1: the signal came before the command had set up its
				// handlers, and killed it, before any request.
				if code != 128+int(sig) && code != 0 && code != -1 {
					t.Errorf("exit %d after %v, want %d (or 0 had the lease been taken and released in time)", code, sig, 128+int(sig))
				}
				s := showJSONOf(t, u)
				if s.State != "free" && s.State != "released" {
					t.Fatalf("after %s was stopped by %v at %v, the lease is %s (held by %s, renewed %.0fs ago): nobody will renew or release it\nstderr:\n%s",
						cmd, sig, d, s.State, s.Holder, s.RenewedAgoS, errOut)
				}
				if strings.Contains(errOut, "before the lease could be taken") && s.State != "free" {
					t.Errorf("%s said the lease was never taken, yet it was written (now %s):\n%s", cmd, s.State, errOut)
				}
				if _, errB, code := runCLI(t, nil, "hold", u, "--instance-id", "beta", "--", "true"); code != 0 {
					t.Errorf("another instance could not take the lease at once: exit %d\n%s", code, errB)
				}
			})
		}
	}
}
