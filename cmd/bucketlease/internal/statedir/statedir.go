package statedir

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/mushroomdb/bucketlease/internal/location"
)

// For is the state directory hold gives the lease at loc: the one
// --state-dir names (or the default under $XDG_STATE_HOME or
// ~/.local/state), with a subdirectory per location, since a lease key
// names a lease only within its bucket; "" for --state-dir none.
//
// The subdirectory is named by a hash of loc.Key (scheme, bucket, prefix,
// endpoint), so that two spellings of one prefix (a trailing slash, a
// parameter at its default, the parameters' order) share it and two
// prefixes never do. It used to be named by a hash of the URL as
// displayed; a directory of that name, left by an earlier version, is
// renamed to the new one the first time, so that an upgrade keeps what it
// holds: the journal that lets a restart adopt its own lease at once
// rather than wait a TTL, and the watch of a suspect lease object. Losing
// either would only make a run wait (a journal never makes one adopt what
// it did not write), so a rename that fails is not an error; neither is a
// process of the earlier version still running there, whose lock moves
// with its file.
func For(getenv func(string) string, flagValue string, loc *location.Location) (string, error) {
	dir := flagValue
	switch dir {
	case "none":
		return "", nil
	case "":
		if x := getenv("XDG_STATE_HOME"); x != "" && filepath.IsAbs(x) {
			dir = filepath.Join(x, "bucketlease")
		} else if h := getenv("HOME"); h != "" && filepath.IsAbs(h) {
			dir = filepath.Join(h, ".local", "state", "bucketlease")
		} else {
			return "", nil
		}
	}
	if !filepath.IsAbs(dir) {
		return "", fmt.Errorf("%q is not an absolute path", dir)
	}
	sub := filepath.Join(dir, hashName(loc.Key()))
	if old := filepath.Join(dir, hashName(loc.String())); old != sub {
		if _, err := os.Lstat(sub); errors.Is(err, fs.ErrNotExist) {
			_ = os.Rename(old, sub) // nothing there, or kept where it is: see above
		}
	}
	return sub, nil
}

// hashName is the name of the state subdirectory for s: 16 hex digits of
// its SHA-256.
func hashName(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}
