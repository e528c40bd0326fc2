//go:build linux

package filelock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/file"
)

// stoppedExitWait bounds how long break waits for a process it ended to be
// gone.
const stoppedExitWait = 10 * time.Second

// EndStopped ends, with SIGKILL, every process that holds the
// file driver's lock on key in b (a *file.Bucket) and is stopped, and waits until each is
// gone, which lets go of the lock. A stopped process runs none of its own
// code before SIGKILL ends it, so nothing it staged lands after the break:
// that is why it is killed, not resumed or sent SIGTERM, which it would act
// on only once resumed, after finishing its write. It says on w what it
// ended.
func EndStopped(ctx context.Context, w io.Writer, b driver.Bucket, key string) error {
	fb, ok := b.(*file.Bucket)
	if !ok {
		return fmt.Errorf("--kill-stopped-lock-holder: %w: only the file driver takes a lock held by a process on this machine", driver.ErrUnsupported)
	}
	hs, err := fb.LockHolders(key)
	if err != nil {
		return fmt.Errorf("reading which processes hold the file driver's lock on %s: %w", key, err)
	}
	for _, h := range hs {
		if !h.Stopped {
			continue // a running holder lets go within milliseconds
		}
		ended, err := endStopped(ctx, fb, key, h.Pid)
		if err != nil {
			return err
		}
		if ended {
			fmt.Fprintf(w, "Ended process %d (SIGKILL): it was stopped while holding the file driver's lock on %s, which nothing else could write until it let go.\n", h.Pid, key)
		}
	}
	return nil
}

// KillStoppedHint adds to err, if it is the file driver's refusal to
// wait for a stopped holder of a lock, that break can end that holder.
func KillStoppedHint(err error) error {
	var locked *file.LockedError
	if errors.As(err, &locked) && slices.ContainsFunc(locked.Holders, func(h file.LockHolder) bool { return h.Stopped }) {
		return fmt.Errorf("%w (or let break end it: add --kill-stopped-lock-holder)", err)
	}
	return err
}

// endStopped kills pid if it still holds the lock on key and is stopped,
// and waits until it is gone; ended is false when it had already resumed
// or gone. It signals through a pidfd, so that the process it looked at is
// the one it kills even if pid is reused meanwhile.
func endStopped(ctx context.Context, fb *file.Bucket, key string, pid int) (ended bool, err error) {
	fail := func(what string, err error) (bool, error) {
		return false, fmt.Errorf("%s process %d, stopped while holding the file driver's lock on %s: %w; end it as its owner (kill -KILL %d)", what, pid, key, err, pid)
	}
	fd, err := unix.PidfdOpen(pid, 0)
	switch {
	case errors.Is(err, unix.ESRCH):
		return false, nil // gone, and its lock with it
	case err != nil:
		return fail("cannot look at", err)
	}
	defer unix.Close(fd)
	hs, err := fb.LockHolders(key)
	if err != nil {
		return fail("cannot read the lock of", err)
	}
	stopped := false
	for _, h := range hs {
		stopped = stopped || h.Pid == pid && h.Stopped
	}
	if !stopped {
		return false, nil
	}
	if err := unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); errors.Is(err, unix.ESRCH) {
		return false, nil
	} else if err != nil {
		return fail("cannot end", err)
	}
	// The pidfd reads as ready once the process has exited, after the
	// kernel closed its files and so released its lock.
	for deadline := time.Now().Add(stoppedExitWait); ; {
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 100)
		if n > 0 {
			return true, nil
		}
		if err != nil && !errors.Is(err, unix.EINTR) {
			return fail("cannot wait for", err)
		}
		if err := ctx.Err(); err != nil {
			return fail("gave up waiting for the end of", err)
		}
		if time.Now().After(deadline) {
			return fail("sent SIGKILL but did not see the end of", fmt.Errorf("still there after %v", stoppedExitWait))
		}
	}
}
