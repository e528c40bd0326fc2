package main

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/mushroomdb/bucketlease/lease"
)

// fileLeaseAbsent looks at a file:// URL before show or break open it (the
// file driver creates the directory and its metadata folder when it opens
// one): a directory that does not exist is an error, and a directory
// without a LEASE file is free; either way nothing is created. It returns
// true when the lease is known to be free without opening the driver. For
// other schemes it returns false and no error.
func fileLeaseAbsent(rawURL string) (bool, error) {
	if schemeOf(rawURL) != "file" { // anything unusual in the URL is the driver's to judge
		return false, nil
	}
	u, err := url.Parse(rawURL)
	if err != nil || u.Path == "" || !filepath.IsAbs(u.Path) || u.Host != "" || u.User != nil || u.Fragment != "" || !knownFileQuery(u.Query()) {
		return false, nil // the driver says what is wrong with it
	}
	dir := filepath.Clean(u.Path)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, fmt.Errorf("%s: no such directory %s: nothing holds a lease there (a typo?)", displayURL(rawURL), dir)
	case err != nil:
		return false, fmt.Errorf("%s: %w", displayURL(rawURL), err)
	case !fi.IsDir():
		return false, fmt.Errorf("%s: %s is not a directory", displayURL(rawURL), dir)
	}
	if _, err := os.Lstat(filepath.Join(dir, lease.Key(""))); errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	return false, nil
}

// freeStatus is the status of a prefix without a lease object.
func freeStatus() lease.Status {
	now := time.Now()
	return lease.Status{Key: lease.Key(""), State: lease.Free, Now: now, TakeoverAt: now}
}

// knownFileQuery reports whether q holds only parameters the file driver
// knows (driver/file: trust_network_flock), so that show and break may
// look without opening the driver; anything else is left to the driver to
// refuse, as hold does.
func knownFileQuery(q url.Values) bool {
	for k := range q {
		if k != "trust_network_flock" {
			return false
		}
	}
	return true
}
