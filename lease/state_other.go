//go:build !unix

package lease

import (
	"errors"
	"os"
)

// errNoLocking is lockFile's error where the platform has no flock.
var errNoLocking = errors.New("lease: StateDir needs flock(2), which this platform lacks")

// lockFile fails: without flock a StateDir never adopts (the safe side).
func lockFile(*os.File) error { return errNoLocking }
