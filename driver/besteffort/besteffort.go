// Package besteffort runs the lease on a service whose conditional writes
// cannot be trusted, by emulating each precondition with a read followed by
// an unconditional write.
//
// It is what MUSHROOMDB_BACKUP_LEASE_CONDITIONAL=off selects. It catches the
// common case (a second machine that starts while the first is running) but
// not a race: two writers that read before either writes both pass, and the
// later write wins. Its Capabilities say so, declaring BestEffort, and the
// lease logs it at WARN.
package besteffort

import (
	"context"
	"errors"
	"io"

	"github.com/mushroomdb/bucketlease/driver"
)

// Bucket wraps a bucket, emulating preconditions.
type Bucket struct {
	inner driver.Bucket
}

// Wrap returns b with every precondition emulated by a read.
func Wrap(b driver.Bucket) *Bucket { return &Bucket{inner: b} }

// Unwrap returns the wrapped bucket.
func (b *Bucket) Unwrap() driver.Bucket { return b.inner }

// Capabilities declares BestEffort exclusion and a (best-effort)
// conditional Delete.
func (b *Bucket) Capabilities() driver.Capabilities {
	return driver.Capabilities{Exclusion: driver.BestEffort, ConditionalDelete: true}
}

// Get reads through.
func (b *Bucket) Get(ctx context.Context, key string) (io.ReadCloser, driver.Version, error) {
	return b.inner.Get(ctx, key)
}

// check reads key's current version and tests cond against it.
func (b *Bucket) check(ctx context.Context, op *driver.Op, key string, cond driver.Condition) error {
	if cond.Unconditional() {
		return nil
	}
	rc, cur, err := b.inner.Get(ctx, key)
	exists := err == nil
	if exists {
		rc.Close()
	} else if !errors.Is(err, driver.ErrNotExist) {
		return err
	}
	ok := !exists
	if v, isMatch := cond.Match(); isMatch {
		ok = exists && cur == v
	}
	if !ok {
		return op.Fail(driver.ErrPrecondition, nil)
	}
	return nil
}

// Put checks cond by reading, then writes unconditionally.
func (b *Bucket) Put(ctx context.Context, key string, data []byte, cond driver.Condition) (driver.Version, error) {
	op, err := driver.Begin(ctx, b.Capabilities(), "besteffort", driver.OpPut, key, cond)
	if err != nil {
		return "", err
	}
	if err := b.check(ctx, op, key, cond); err != nil {
		return "", err
	}
	return b.inner.Put(ctx, key, data, driver.Condition{})
}

// Delete checks cond by reading, then deletes unconditionally.
func (b *Bucket) Delete(ctx context.Context, key string, cond driver.Condition) error {
	op, err := driver.Begin(ctx, b.Capabilities(), "besteffort", driver.OpDelete, key, cond)
	if err != nil {
		return err
	}
	if err := b.check(ctx, op, key, cond); err != nil {
		return err
	}
	return b.inner.Delete(ctx, key, driver.Condition{})
}
