//go:build unix

package cli

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/internal/testsupport/miniotest"
)

// TestInterruptDuringAcquireLeavesNoLease: hold and put stopped by SIGTERM,
// SIGINT or SIGHUP in their first second or two, while the acquire writes
// the lease object, waits for the service's clock and rewrites it with an
// epoch (about two seconds on file://, whose clock is read at a 2 s
// resolution), exit 128+N and leave no fresh lease behind: the prefix is
// free or released, and another instance takes it at once. A message that
// says the lease was never taken is only printed when nothing was written.
func TestInterruptDuringAcquireLeavesNoLease(t *testing.T) {
	delays := []time.Duration{150 * time.Millisecond, 600 * time.Millisecond, 1200 * time.Millisecond}
	for i, d := range delays {
		for _, cmd := range []string{"hold", "put"} {
			t.Run(fmt.Sprintf("%s-%v", cmd, d), func(t *testing.T) {
				t.Parallel()
				u, _ := fileURL(t)
				interruptAcquire(t, nil, u, cmd, interruptSignals[i%len(interruptSignals)], d)
			})
		}
	}
}

// TestInterruptDuringAcquireLeavesNoLeaseMinIO is the same on MinIO, where
// the acquire's wait for the service's clock is about a second.
func TestInterruptDuringAcquireLeavesNoLeaseMinIO(t *testing.T) {
	srv := miniotest.Env(t)
	bucket := srv.NewBucket(t)
	env := minioEnv(t, srv)
	delays := []time.Duration{300 * time.Millisecond, 700 * time.Millisecond, 1100 * time.Millisecond}
	for i, d := range delays {
		for _, cmd := range []string{"hold", "put"} {
			t.Run(fmt.Sprintf("%s-%v", cmd, d), func(t *testing.T) {
				u := "minio://" + srv.Addr + "/" + bucket + "/" + fmt.Sprintf("interrupt-%s-%d", cmd, i) + "?tls=false"
				interruptAcquire(t, env, u, cmd, interruptSignals[i%len(interruptSignals)], d)
			})
		}
	}
}

var interruptSignals = []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP}

// interruptAcquire starts hold or put on u, sends sig d after its start,
// and checks what it leaves.
func interruptAcquire(t *testing.T, env []string, u, cmd string, sig syscall.Signal, d time.Duration) {
	t.Helper()
	args := []string{"hold", u, "--ttl", "1h", "--instance-id", "alpha", "--", "sleep", "60"}
	if cmd == "put" {
		args = []string{"put", u, "obj", "--ttl", "1h", "--instance-id", "alpha", "--", "sh", "-c", "sleep 60; echo x"}
	}
	p := start(t, env, args...)
	time.Sleep(d)
	p.signal(sig)
	code := p.wait()
	errOut := p.errOutput()
	t.Logf("%s stopped by %v at %v: exit %d\n%s", cmd, sig, d, code, errOut)
	// -1: the signal came before the command had set up its handlers, and
	// killed it, before any request.
	if code != 128+int(sig) && code != 0 && code != -1 {
		t.Errorf("exit %d after %v, want %d (or 0 had the lease been taken and released in time)", code, sig, 128+int(sig))
	}
	s := showWith(t, env, u)
	if s.State != "free" && s.State != "released" {
		t.Fatalf("after %s was stopped by %v at %v, the lease is %s (held by %s, renewed %.0fs ago): nobody will renew or release it\nstderr:\n%s",
			cmd, sig, d, s.State, s.Holder, s.RenewedAgoS, errOut)
	}
	if strings.Contains(errOut, "before the lease could be taken") && s.State != "free" {
		t.Errorf("%s said the lease was never taken, yet it was written (now %s):\n%s", cmd, s.State, errOut)
	}
	if _, errB, code := runCLI(t, env, "hold", u, "--instance-id", "beta", "--", "true"); code != 0 {
		t.Errorf("another instance could not take the lease at once: exit %d\n%s", code, errB)
	}
}
