//go:build unix

package file

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/mushroomdb/bucketlease/driver"
)

// Delete removes key if cond holds, then the directories the removal left
// empty, up to the bucket's own.
func (b *Bucket) Delete(ctx context.Context, key string, cond driver.Condition) error {
	op, err := driver.BeginDelete(ctx, b.caps, Scheme, key, cond)
	if err != nil {
		return err
	}
	p, err := b.path(op, key)
	if err != nil {
		return err
	}
	if kind := b.rootMissing(); kind != nil {
		return op.Fail(kind, nil)
	}
	unlock, err := b.lock(ctx, key)
	if err != nil {
		return op.Fail(osKind(err), err)
	}
	defer unlock()
	if derr := strayDir(key, p); derr != nil {
		return op.Fail(driver.ErrInvalidKey, derr)
	}
	cur, _, err := b.current(key, p)
	if err != nil {
		return op.Fail(osKind(err), err)
	}
	if cur == "" && cond == (driver.Condition{}) {
		return nil
	}
	if !satisfied(cur, cond) {
		return op.Fail(driver.ErrPrecondition, nil)
	}
	if err := os.Remove(p); err != nil {
		return op.Fail(osKind(err), err)
	}
	// The record goes with the file; one left by a crash here names a
	// file that is gone, which no file at p will match.
	if err := os.Remove(b.recordPath(key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return op.Fail(osKind(err), err)
	}
	// A concurrent Delete of a neighbour may have pruned the directory
	// this removal emptied: then the entry is gone with it.
	if err := syncDir(filepath.Dir(p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return op.Fail(osKind(err), err)
	}
	// Remove emptied parents, so that a key that was a prefix of this one
	// can be written again. Remove fails on a directory that is not empty
	// (another key lives there), which ends the walk.
	for d := filepath.Dir(p); d != b.root && strings.HasPrefix(d, b.root+string(filepath.Separator)); d = filepath.Dir(d) {
		if os.Remove(d) != nil {
			break
		}
	}
	return nil
}
