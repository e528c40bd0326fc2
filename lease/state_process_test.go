//go:build unix

package lease_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/driver/file"
	"github.com/mushroomdb/bucketlease/lease"
)

// TestStateChild is the holder process of the state directory tests: it
// acquires the lease on the file store named by its environment, prints
// "held", and then renews until it is killed. It does nothing in a normal
// test run.
func TestStateChild(t *testing.T) {
	store, state := os.Getenv("LEASE_STATE_CHILD_STORE"), os.Getenv("LEASE_STATE_CHILD_DIR")
	if store == "" {
		t.Skip("the child process of TestStateAcrossRealProcesses")
	}
	b, err := file.Open(store)
	if err != nil {
		t.Fatal(err)
	}
	o := &lease.Options{InstanceID: "me", TTL: 30 * time.Second, StateDir: state}
	l, err := lease.Acquire(context.Background(), bucket.New(b, "db1"), o)
	if err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("held\n")
	l.Keep(context.Background())
}

// startHolder starts TestStateChild as a real process and waits until it
// holds the lease.
func startHolder(t *testing.T, store, state string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestStateChild$", "-test.v")
	cmd.Env = append(os.Environ(), "LEASE_STATE_CHILD_STORE="+store, "LEASE_STATE_CHILD_DIR="+state)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "held" {
			go func() {
				for sc.Scan() {
				}
			}()
			return cmd
		}
	}
	t.Fatalf("the holder process did not acquire: %v", sc.Err())
	return nil
}

// A process killed by SIGKILL is adopted at once by its restart; a process
// that is only stopped (SIGSTOP) is not, until it dies.
func TestStateAcrossRealProcesses(t *testing.T) {
	if os.Getenv("LEASE_STATE_CHILD_STORE") != "" {
		t.Skip("in the child")
	}
	ctx := context.Background()
	store, state := t.TempDir(), t.TempDir()
	b, err := file.Open(store)
	if err != nil {
		t.Fatal(err)
	}
	// restart is a new process of the instance: it tries once, and its
	// lock is dropped when it is done, as at its exit.
	restart := func(t *testing.T) (*lease.Lease, error) {
		c, err := lease.NewContender(bucket.New(b, "db1"), &lease.Options{InstanceID: "me", TTL: 30 * time.Second, StateDir: state})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c.Acquire(ctx)
	}

	t.Run("SIGKILL", func(t *testing.T) {
		holder := startHolder(t, store, state)
		holder.Process.Signal(syscall.SIGKILL)
		holder.Wait()
		l, err := restart(t)
		if err != nil {
			t.Fatalf("the restart after SIGKILL did not adopt at once: %v", err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("SIGSTOP, then SIGKILL", func(t *testing.T) {
		holder := startHolder(t, store, state)
		holder.Process.Signal(syscall.SIGSTOP)
		if _, err := restart(t); !errors.Is(err, lease.ErrHeld) {
			t.Fatalf("adopted the lease of a stopped process: %v", err)
		}
		holder.Process.Signal(syscall.SIGKILL)
		holder.Wait()
		l, err := restart(t)
		if err != nil {
			t.Fatalf("once the stopped process was killed: %v", err)
		}
		l.Release(ctx)
	})
	t.Run("another state directory", func(t *testing.T) {
		holder := startHolder(t, store, state)
		holder.Process.Signal(syscall.SIGKILL)
		holder.Wait()
		c, err := lease.NewContender(bucket.New(b, "db1"), &lease.Options{InstanceID: "me", TTL: 30 * time.Second, StateDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Acquire(ctx); !errors.Is(err, lease.ErrHeld) {
			t.Fatalf("a twin with another state directory: %v, want ErrHeld", err)
		}
	})
}
