//go:build !linux

package filelock

import (
	"context"
	"fmt"
	"io"

	"github.com/mushroomdb/bucketlease/driver"
)

// EndStopped is not available here: this system does not say
// which process holds a lock, or whether it is stopped.
func EndStopped(ctx context.Context, w io.Writer, b driver.Bucket, key string) error {
	return fmt.Errorf("--kill-stopped-lock-holder: %w: this system does not name the process holding the file driver's lock on %s; find it (lsof, fuser) and end it with kill -KILL", driver.ErrUnsupported, key)
}

// KillStoppedHint returns err: this system does not say whether a
// lock's holder is stopped.
func KillStoppedHint(err error) error { return err }
