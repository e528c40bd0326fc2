//go:build linux

package file

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
)

const lockHelperEnv = "BUCKETLEASE_FILE_LOCK_HELPER_DIR"

// TestLockHelperProcess is not a test: TestStoppedLockHolder runs the test
// binary again with lockHelperEnv set, and this function takes the lock on
// LEASE there, says so, and holds it until its stdin closes.
func TestLockHelperProcess(t *testing.T) {
	dir := os.Getenv(lockHelperEnv)
	if dir == "" {
		t.Skip("helper process for TestStoppedLockHolder")
	}
	b, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	unlock, err := b.lock(context.Background(), "LEASE")
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	os.Stdout.WriteString("locked\n")
	io.Copy(io.Discard, os.Stdin)
}

// TestStoppedLockHolder: a process stopped (SIGSTOP) while it holds the
// lock on LEASE makes a Put of LEASE fail within seconds with a
// *LockedError naming it, rather than wait for as long as it stays
// stopped, and LockHolders names it as stopped; once it is resumed and
// lets go, the Put succeeds.
func TestStoppedLockHolder(t *testing.T) {
	dir := t.TempDir()
	b, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockHelperProcess$")
	cmd.Env = append(os.Environ(), lockHelperEnv+"="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "locked\n" {
		t.Fatalf("the helper did not take the lock: %q, %v", line, err)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100 && !stopped(pid); i++ {
		time.Sleep(10 * time.Millisecond)
	}
	hs, err := b.LockHolders("LEASE")
	if err != nil || len(hs) != 1 || hs[0] != (LockHolder{Pid: pid, Stopped: true}) {
		t.Fatalf("LockHolders(LEASE) = %+v, %v; want process %d, stopped", hs, err, pid)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	start := time.Now()
	_, err = b.Put(ctx, "LEASE", []byte("x"), driver.PutOptions{If: driver.IfAbsent()})
	took := time.Since(start)
	var le *LockedError
	if !errors.As(err, &le) || took > stoppedGrace+3*time.Second {
		t.Fatalf("Put under a stopped lock holder: %v after %v; want a *LockedError within %v", err, took, stoppedGrace+3*time.Second)
	}
	for _, want := range []string{`"LEASE"`, "process " + strconv.Itoa(pid), "stopped", "kill -CONT " + strconv.Itoa(pid)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
	if _, err := os.Stat(b.root + "/LEASE"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused Put left LEASE behind: %v", err)
	}
	syscall.Kill(pid, syscall.SIGCONT)
	stdin.Close()
	cmd.Wait()
	if _, err := b.Put(ctx, "LEASE", []byte("x"), driver.PutOptions{If: driver.IfAbsent()}); err != nil {
		t.Fatalf("Put once the holder let go: %v", err)
	}
	if hs, err := b.LockHolders("LEASE"); err != nil || len(hs) != 0 {
		t.Errorf("LockHolders(LEASE) after the writes = %+v, %v; want none", hs, err)
	}
}
