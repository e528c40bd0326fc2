package file

import (
	"os"
	"path/filepath"
)

// metaDir is the driver's folder in a bucket's directory: the version
// records, the lock files and the staged writes.
const metaDir = ".bucketlease"

// LockFiles returns the bucket's lock file directory (one file per key
// ever written, never removed) and how many it holds, up to ten million.
func LockFiles(dir string) (lockDir string, n int) {
	lockDir = filepath.Join(filepath.Clean(dir), metaDir, "locks")
	f, err := os.Open(lockDir)
	if err != nil {
		return lockDir, 0
	}
	defer f.Close()
	for range 10_000 {
		names, err := f.Readdirnames(1024)
		n += len(names)
		if err != nil || len(names) == 0 {
			break
		}
	}
	return lockDir, n
}

// Opened reports whether a bucket was opened in dir before: its lock and
// staging folders are there, so that opening it creates nothing. A
// directory no bucket was opened in has no staged writes.
func Opened(dir string) bool {
	for _, d := range []string{"locks", "tmp"} {
		if fi, err := os.Stat(filepath.Join(dir, metaDir, d)); err != nil || !fi.IsDir() {
			return false
		}
	}
	return true
}

// Path is the file that holds the object key in the bucket kept in dir.
func Path(dir, key string) string { return filepath.Join(filepath.Clean(dir), filepath.FromSlash(key)) }
