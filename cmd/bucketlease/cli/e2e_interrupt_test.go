//go:build unix

package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/internal/testsupport/miniotest"
)

// TestInterruptDuringAcquireLeavesNoLease: hold and put stopped by SIGTERM,
// SIGINT or SIGHUP during their acquire exit 128+N and leave no fresh
// lease behind: the prefix is free or released, and another instance
// takes it at once. A message that says the lease was never taken is only
// printed when nothing was written. The acquire runs over a slowed link
// (slowfile, slowLink a request), so that it takes seconds and a signal
// lands inside it: at fixed moments from the start, and just after the
// lease object appears on disk, while the acquire goes on to mint its
// epoch.
func TestInterruptDuringAcquireLeavesNoLease(t *testing.T) {
	prog := slowBinary(t)
	moments := []time.Duration{150 * time.Millisecond, 1200 * time.Millisecond, afterLeaseWritten}
	for i, d := range moments {
		for _, cmd := range []string{"hold", "put"} {
			t.Run(fmt.Sprintf("%s-%s", cmd, momentName(d)), func(t *testing.T) {
				t.Parallel()
				u, dir := fileURL(t)
				slow := "slowfile://" + dir + "?delay=" + slowLink.String()
				at := func(p *proc) {
					if d != afterLeaseWritten {
						time.Sleep(d)
						return
					}
					waitForFile(t, p, filepath.Join(dir, "LEASE"))
				}
				errOut := interruptAcquire(t, nil, prog, slow, u, cmd, interruptSignals[i%len(interruptSignals)], at)
				if d == afterLeaseWritten && !strings.Contains(errOut, "during an acquire") {
					t.Errorf("the signal sent as the lease object appeared was not taken as one that came during the acquire:\n%s", errOut)
				}
			})
		}
	}
}

// slowLink is how long slowfile makes each request of the interrupted
// acquire wait, as a distant service's round trip: an acquire on a new
// prefix then takes seconds, and about three requests' time after its
// lease object is written.
const slowLink = 400 * time.Millisecond

// afterLeaseWritten is the moment, among those at which
// TestInterruptDuringAcquireLeavesNoLease interrupts an acquire, at which
// the lease object has just been written.
const afterLeaseWritten = time.Duration(-1)

func momentName(d time.Duration) string {
	if d == afterLeaseWritten {
		return "lease-written"
	}
	return d.String()
}

// waitForFile returns once name exists, polling; it fails the test if p
// exits or 30 s pass first.
func waitForFile(t *testing.T, p *proc, name string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(name); err == nil {
			return
		}
		select {
		case <-p.exited:
			t.Fatalf("the command exited before %s appeared:\n%s", name, p.output())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear within 30 s:\n%s", name, p.output())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

var (
	slowOnce sync.Once
	slowProg string
	slowErr  error
)

// slowBinary builds, once, the bucketlease command with the slowfile
// scheme (testdata/slowfile) and returns its path.
func slowBinary(t *testing.T) string {
	t.Helper()
	slowOnce.Do(func() {
		prog := filepath.Join(filepath.Dir(binary), "bucketlease-slowfile")
		out, err := exec.Command("go", "build", "-o", prog, "./testdata/slowfile").CombinedOutput()
		if err != nil {
			slowErr = fmt.Errorf("building testdata/slowfile: %v\n%s", err, out)
			return
		}
		slowProg = prog
	})
	if slowErr != nil {
		t.Fatal(slowErr)
	}
	return slowProg
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
				interruptAcquire(t, env, binary, u, u, cmd, interruptSignals[i%len(interruptSignals)], func(*proc) { time.Sleep(d) })
			})
		}
	}
}

var interruptSignals = []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP}

// interruptAcquire starts hold or put, the program prog, on acquireURL,
// sends sig at the moment at returns (called with the started process),
// and checks what it leaves on u, the same prefix, with the bucketlease
// command. It returns the stopped command's stderr.
func interruptAcquire(t *testing.T, env []string, prog, acquireURL, u, cmd string, sig syscall.Signal, at func(*proc)) string {
	t.Helper()
	args := []string{"hold", acquireURL, "--ttl", "1h", "--instance-id", "alpha", "--", "sleep", "60"}
	if cmd == "put" {
		args = []string{"put", acquireURL, "obj", "--ttl", "1h", "--instance-id", "alpha", "--", "sh", "-c", "sleep 60; echo x"}
	}
	p := startProg(t, env, prog, args...)
	at(p)
	p.signal(sig)
	code := p.wait()
	errOut := p.errOutput()
	t.Logf("%s stopped by %v: exit %d\n%s", cmd, sig, code, errOut)
	// -1: the signal came before the command had set up its handlers, and
	// killed it, before any request.
	if code != 128+int(sig) && code != 0 && code != -1 {
		t.Errorf("exit %d after %v, want %d (or 0 had the lease been taken and released in time)", code, sig, 128+int(sig))
	}
	s := showWith(t, env, u)
	if s.State != "free" && s.State != "released" {
		t.Fatalf("after %s was stopped by %v, the lease is %s (held by %s, renewed %.0fs ago): nobody will renew or release it\nstderr:\n%s",
			cmd, sig, s.State, s.Holder, s.RenewedAgoS, errOut)
	}
	if strings.Contains(errOut, "before the lease could be taken") && s.State != "free" {
		t.Errorf("%s said the lease was never taken, yet it was written (now %s):\n%s", cmd, s.State, errOut)
	}
	if _, errB, code := runCLI(t, env, "hold", u, "--instance-id", "beta", "--", "true"); code != 0 {
		t.Errorf("another instance could not take the lease at once: exit %d\n%s", code, errB)
	}
	return errOut
}
