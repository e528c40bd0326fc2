//go:build linux

package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/exitcode"
)

// leaveChild is shell that starts a grandchild of put, a sleep with none
// of the producer's files (a helper daemon, say), writes its pid as the
// machine sees it to $GPID, and waits (boundedly) until it has: whatever
// the producer does next, the grandchild is running.
const leaveChild = `read p _ < /proc/self/stat; echo $p > "$PPIDF"
sh -c 'read p _ < /proc/self/stat; echo $p > "$GPID"; exec sleep 300' </dev/null >/dev/null 2>&1 &
i=0; while [ ! -s "$GPID" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done
`

// survivors returns those of pids still alive once bound has passed (at
// once when none is), and kills them, so that none outlives the test.
func survivors(bound time.Duration, pids ...int) []int {
	var left []int
	for end := time.Now().Add(bound); ; time.Sleep(20 * time.Millisecond) {
		left = left[:0]
		for _, p := range pids {
			if alive(p) {
				left = append(left, p)
			}
		}
		if len(left) == 0 || !time.Now().Before(end) {
			break
		}
	}
	for _, p := range left {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	return left
}

// noNS is the flag that runs put's producer without a PID namespace, as
// where none is allowed: the watchdog in a session of its own, a child
// subreaper.
var noNS = []string{"--pid-namespace=false"}

// checkNamespace fails if flags hold noNS and yet pid runs in another PID
// namespace than the test's.
func checkNamespace(t *testing.T, pid int, flags []string) {
	t.Helper()
	if !slices.Contains(flags, noNS[0]) {
		return
	}
	mine, err1 := os.Readlink("/proc/self/ns/pid")
	its, err2 := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid))
	if err1 != nil || err2 != nil || mine != its {
		t.Errorf("with %s the producer (pid %d) is in PID namespace %s (%v), not the test's %s (%v)", noNS[0], pid, its, err2, mine, err1)
	}
}

// TestPutStopsProducersTree: put URL KEY -- PRODUCER leaves nothing of its
// producer running once it has exited, whichever way it ends: the producer
// succeeds or fails, the input or the commit is refused, put gets
// SIGTERM, SIGINT or SIGHUP, the producer ignores SIGTERM (SIGKILL after
// the grace), or put is inside hold; with a PID namespace and without. Each producer starts a grandchild
// that would sleep for 300 s. Before the fix put signalled and waited for
// its direct child only, and the grandchild outlived it.
func TestPutStopsProducersTree(t *testing.T) {
	for _, tc := range []struct {
		name   string
		flags  []string
		pre    string // the producer's shell before leaveChild
		body   string // and after it
		sig    syscall.Signal
		code   int
		inHold bool
	}{
		{name: "exits 0", body: `echo data`, code: 0},
		{name: "exits 3", body: `echo data; exit 3`, code: exitcode.ProducerFailed},
		{name: "input too long", flags: []string{"--size", "10"}, body: `exec cat /dev/zero`, code: exitcode.Mismatch},
		{name: "commit refused", flags: []string{"--if-match", "no-such-version"}, body: `echo data`, code: exitcode.Refused},
		{name: "SIGTERM", body: `exec sleep 300`, sig: syscall.SIGTERM, code: 128 + int(syscall.SIGTERM)},
		{name: "SIGINT", body: `exec sleep 300`, sig: syscall.SIGINT, code: 128 + int(syscall.SIGINT)},
		{name: "SIGHUP", body: `exec sleep 300`, sig: syscall.SIGHUP, code: 128 + int(syscall.SIGHUP)},
		{name: "SIGTERM ignored", pre: "trap '' TERM\n", body: `for i in $(seq 300); do sleep 1; done`, sig: syscall.SIGTERM, code: 128 + int(syscall.SIGTERM)},
		{name: "inside hold", body: `echo data`, inHold: true},
		{name: "exits 0, no PID namespace", flags: noNS, body: `echo data`, code: 0},
		{name: "SIGTERM ignored, no PID namespace", flags: noNS, pre: "trap '' TERM\n", body: `for i in $(seq 300); do sleep 1; done`, sig: syscall.SIGTERM, code: 128 + int(syscall.SIGTERM)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, _ := fileURL(t)
			work := t.TempDir()
			prodPID, childPID := filepath.Join(work, "producer"), filepath.Join(work, "grandchild")
			script := tc.pre + leaveChild + tc.body
			env := []string{"PPIDF=" + prodPID, "GPID=" + childPID, "BL=" + binary, "S=" + script}
			args := append(append([]string{"put", u, "k"}, tc.flags...), "--", "sh", "-c", script)
			if tc.inHold {
				// put exits while hold and its command go on: put's
				// own exit must leave nothing of its producer.
				args = []string{"hold", u, "--", "sh", "-c", `"$BL" put k -- sh -c "$S"; echo "put exited $?"; exec sleep 300`}
			}
			began := time.Now()
			p := start(t, env, args...)
			prod, child := pidFrom(t, prodPID), pidFrom(t, childPID)
			checkNamespace(t, prod, tc.flags)
			if tc.sig != 0 {
				p.signal(tc.sig)
			}
			if tc.inHold {
				p.waitFor(`^put exited 0$`)
			} else {
				// The moment put exits, not when its stderr closes (the
				// watchdog, or a survivor, may hold it).
				for end := time.Now().Add(exitTimeout); alive(p.cmd.Process.Pid) && time.Now().Before(end); {
					time.Sleep(5 * time.Millisecond)
				}
			}
			if left := survivors(0, prod, child); len(left) > 0 {
				t.Errorf("pids %v (of producer %d, grandchild %d) still running after put exited %v after it started", left, prod, child, time.Since(began).Round(time.Millisecond))
			}
			if tc.inHold {
				p.signal(syscall.SIGTERM)
				p.wait()
			} else if code := p.wait(); code != tc.code {
				t.Errorf("put exit %d, want %d:\n%s", code, tc.code, p.output())
			}
		})
	}
}

// TestPutKilledStopsProducersTree: SIGKILL to put URL KEY -- PRODUCER
// leaves neither the producer nor its grandchild running: the producer
// runs under hold's watchdog, which dies with put (PR_SET_PDEATHSIG, and
// the kernel kills its PID namespace) or, without a namespace, kills
// everything once put's end of its control pipe closes. Before the fix
// both ran on.
func TestPutKilledStopsProducersTree(t *testing.T) {
	for _, flags := range [][]string{nil, noNS} {
		t.Run(strings.Join(append([]string{"flags"}, flags...), " "), func(t *testing.T) {
			u, _ := fileURL(t)
			work := t.TempDir()
			prodPID, childPID := filepath.Join(work, "producer"), filepath.Join(work, "grandchild")
			args := append(append([]string{"put", u, "k"}, flags...), "--", "sh", "-c", leaveChild+`exec sleep 300`)
			p := start(t, []string{"PPIDF=" + prodPID, "GPID=" + childPID}, args...)
			prod, child := pidFrom(t, prodPID), pidFrom(t, childPID)
			checkNamespace(t, prod, flags)
			p.signal(syscall.SIGKILL)
			if left := survivors(10*time.Second, prod, child); len(left) > 0 {
				t.Errorf("pids %v (of producer %d, grandchild %d) still running 10s after put was killed", left, prod, child)
			}
			if code := p.wait(); code != -1 {
				t.Errorf("put exit %d after SIGKILL, want -1 (killed)", code)
			}
		})
	}
}
