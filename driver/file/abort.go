//go:build unix

package file

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/mushroomdb/bucketlease/driver"
)

// abortFunc is the Abort of the staged file p (of key) that ListPending
// yields: abortStaged.
func (b *Bucket) abortFunc(key, p string) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := b.abortStaged(ctx, p); err != nil {
			var kind error
			if errors.Is(err, errStagedLive) {
				kind = driver.ErrPrecondition
			}
			return &driver.OpError{Driver: Scheme, Op: "delete", Key: key, Kind: kind,
				Err: fmt.Errorf("removing the staged file %s: %w", p, err)}
		}
		return nil
	}
}

// errStagedLive is why abortStaged leaves a staged file whose writer is
// still running.
var errStagedLive = errors.New("a process holds its lock: its writer is still writing it, and may still commit it")

// abortStaged removes the staged file p and its note if its writer is gone,
// under the staging lock as sweep does. A file already gone is a success;
// one whose writer holds its lock is errStagedLive.
func (b *Bucket) abortStaged(ctx context.Context, p string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	unlock, err := flockPath(ctx, filepath.Join(b.root, metaDir, stageLock), "", syscall.LOCK_EX)
	if err != nil {
		return err
	}
	defer unlock()
	live, err := locked(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		os.Remove(p + keySuffix)
		return nil
	case err != nil:
		return err
	case live:
		return errStagedLive
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	os.Remove(p + keySuffix)
	return nil
}
