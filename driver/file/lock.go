//go:build unix

package file

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// stoppedGrace is how long a wait for a lock goes on once a holder is seen
// stopped: a lock is held for a few milliseconds, so a holder stopped this
// long stays stopped until resumed.
const stoppedGrace = 200 * time.Millisecond

// lockWaitMax bounds any wait for a lock, for holders whose state cannot
// be read (systems without /proc/locks) or that are not stopped but do not
// let go (a process hung in a system call).
const lockWaitMax = 30 * time.Second

// lockPoll is the longest pause between two tries of a lock.
const lockPoll = 20 * time.Millisecond

// LockHolder is a process that holds one of the file driver's locks.
type LockHolder struct {
	Pid int // the process's id, in the reader's pid namespace
	// Stopped: the process is stopped (its state is T or t: SIGSTOP,
	// Ctrl-Z, a debugger, a frozen cgroup), so it will not let go of the
	// lock until someone resumes it (kill -CONT PID) or ends it.
	Stopped bool
}

// LockedError is the error of a write that gave up waiting for its key's
// lock, held by a stopped process or for lockWaitMax. The write did nothing.
type LockedError struct {
	Key     string // the key whose lock it is, or "" for the staging directory's
	Path    string // the lock file
	Holders []LockHolder
	Waited  time.Duration
	// Err is the context's error when the caller's context ended the wait
	// while a holder was stopped, nil when the driver gave up.
	Err error
}

// Unwrap returns the context's error that ended the wait, if one did.
func (e *LockedError) Unwrap() error { return e.Err }

func (e *LockedError) Error() string {
	what := "the file driver's lock on key " + fmt.Sprintf("%q", e.Key)
	if e.Key == "" {
		what = "the file driver's lock on its staging directory"
	}
	for _, h := range e.Holders {
		if h.Stopped {
			return fmt.Sprintf("%s (%s) is held by process %d, which is stopped (SIGSTOP, Ctrl-Z, a debugger or a frozen cgroup), "+
				"and nothing can write the key until it lets go: resume it (kill -CONT %d) or end it (kill -KILL %d: a stopped process ignores every other signal until it is resumed, and then finishes its write first), then try again",
				what, e.Path, h.Pid, h.Pid, h.Pid)
		}
	}
	if len(e.Holders) > 0 {
		return fmt.Sprintf("%s (%s) has been held for %v by process %d, which does not let go: "+
			"see what it is doing, or end it (kill %d), then try again", what, e.Path, e.Waited.Round(time.Second), e.Holders[0].Pid, e.Holders[0].Pid)
	}
	return fmt.Sprintf("%s (%s) has been held for %v by a process this system does not name: "+
		"find it (lsof %s, fuser %s) and resume or end it, then try again", what, e.Path, e.Waited.Round(time.Second), e.Path, e.Path)
}

// lockPath is the lock file of key.
func (b *Bucket) lockPath(key string) string {
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(b.root, metaDir, "locks", hex.EncodeToString(sum[:16]))
}

// lock takes the exclusive flock for key and returns its release.
func (b *Bucket) lock(ctx context.Context, key string) (func(), error) {
	return flockPath(ctx, b.lockPath(key), key, syscall.LOCK_EX)
}

// LockHolders returns the processes that hold the lock taken around each
// write of key: usually none, or one stopped while it held it, which blocks
// every write of the key. It names them on Linux and returns nil elsewhere.
func (b *Bucket) LockHolders(key string) ([]LockHolder, error) {
	st, err := os.Stat(b.lockPath(key))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return lockHolders(st)
}

// flockPath takes the flock how on the lock file lp (created if needed)
// and returns its release; key names the lock in errors. It polls without
// blocking, so no thread stays in flock(2) for a wait given up, and fails
// with a *LockedError once a holder has been stopped for stoppedGrace, or
// after lockWaitMax.
func flockPath(ctx context.Context, lp, key string, how int) (func(), error) {
	f, err := os.OpenFile(lp, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	var stoppedSince time.Time
	for pause := 50 * time.Microsecond; ; pause = min(2*pause, lockPoll) {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err == nil {
			if err = ctx.Err(); err == nil {
				return func() { f.Close() }, nil // closing the descriptor releases the lock
			}
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, err
		}
		waited := time.Since(start)
		if pause == lockPoll || waited >= lockWaitMax {
			holders := heldBy(f)
			stopped := false
			for _, h := range holders {
				stopped = stopped || h.Stopped
			}
			switch {
			case !stopped:
				stoppedSince = time.Time{}
			case stoppedSince.IsZero():
				stoppedSince = time.Now()
			}
			if stopped && time.Since(stoppedSince) >= stoppedGrace || waited >= lockWaitMax {
				f.Close()
				return nil, &LockedError{Key: key, Path: lp, Holders: holders, Waited: waited}
			}
		}
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			// Named, if a holder is stopped: a caller that bounds each
			// request more tightly than stoppedGrace learns why too.
			holders := heldBy(f)
			f.Close()
			for _, h := range holders {
				if h.Stopped {
					return nil, &LockedError{Key: key, Path: lp, Holders: holders, Waited: time.Since(start), Err: ctx.Err()}
				}
			}
			return nil, ctx.Err()
		}
	}
}

// heldBy returns the holders of the lock on the open lock file f, nil if
// they cannot be read.
func heldBy(f *os.File) []LockHolder {
	st, err := f.Stat()
	if err != nil {
		return nil
	}
	hs, _ := lockHolders(st)
	return hs
}
