//go:build !linux

package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/mushroomdb/bucketlease/driver"
)

// endStoppedLockHolders is not available here: this system does not say
// which process holds a lock, or whether it is stopped.
func endStoppedLockHolders(ctx context.Context, w io.Writer, b driver.Bucket, key string) error {
	return fmt.Errorf("--kill-stopped-lock-holder: %w: this system does not name the process holding the file driver's lock on %s; find it (lsof, fuser) and end it with kill -KILL", driver.ErrUnsupported, key)
}

// withKillStoppedHint returns err: this system does not say whether a
// lock's holder is stopped.
func withKillStoppedHint(err error) error { return err }
