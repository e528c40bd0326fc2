//go:build !unix

package lease

import (
	"errors"
	"os"
)

// errNoLocking is lockFile's error where the platform has no flock.
var errNoLocking = errors.New("lease: StateDir needs flock(2), which this platform lacks")

// lockFile reports that this platform has no flock: a contender with a
// StateDir then never adopts, which is the safe direction.
func lockFile(*os.File) error { return errNoLocking }
