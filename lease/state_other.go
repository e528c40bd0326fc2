//go:build !unix

package lease

import "os"

// lockFile reports that this platform has no flock: a contender with a
// StateDir then never adopts, which is the safe direction.
func lockFile(*os.File) error { return errNoLocking }
