//go:build unix && !linux

package file

import "io/fs"

// lockHolders returns nil: outside Linux the driver has no way to name the
// processes that hold a flock(2), so a wait for a lock ends only at
// lockWaitMax (or its context's end).
func lockHolders(fs.FileInfo) ([]LockHolder, error) { return nil, nil }
