package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/file"
	"github.com/mushroomdb/bucketlease/internal/location"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// fileLeaseAbsent looks at a file:// URL before show or break open it (the
// file driver creates the directory and its metadata folder when it opens
// one): a directory that does not exist is an error, and a directory
// without a LEASE file is free; either way nothing is created. It returns
// true when the lease is known to be free without opening the driver. For
// other schemes it returns false and no error.
func fileLeaseAbsent(loc *location.Location) (bool, error) {
	dir := fileDir(loc)
	if dir == "" { // anything unusual in the URL is the driver's to judge
		return false, nil
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, fmt.Errorf("%s: no such directory %q: nothing holds a lease there (a typo?)", loc, dir)
	case err != nil:
		return false, fmt.Errorf("%s: %w", loc, err)
	case !fi.IsDir():
		return false, fmt.Errorf("%s: %q is not a directory", loc, dir)
	}
	return file.Absent(dir, admin.Key("")), nil
}

// fileDir is the directory a file:// URL names (file.Dir), or "" when the
// URL is not one show reads without opening the driver.
func fileDir(loc *location.Location) string {
	if loc.Scheme != "file" {
		return ""
	}
	return file.Dir(loc.URL())
}

// freeStatus is the status of a prefix without a lease object.
func freeStatus() admin.Status {
	now := time.Now()
	return admin.Status{Key: admin.Key(""), State: admin.Free, Now: now, TakeoverAt: now}
}

// fileLeaseNotObject refuses a file:// URL whose {prefix}/LEASE is a
// directory, empty or not: no lease object can be stored there (the file
// driver keeps an object as a file), and one holding files would otherwise
// read as no lease at all, "free", since its files are keys LEASE/… of
// their own. show, break, hold, put and probe call it before they open the
// driver; the error names the path and the fix. Other schemes, and a LEASE
// that is not a directory, give nil.
func fileLeaseNotObject(loc *location.Location) error {
	if loc.Scheme != "file" {
		return nil
	}
	p, names, isDir := file.KeyDir(loc.URL(), admin.Key(""))
	if !isDir {
		return nil
	}
	holds := "nothing"
	switch {
	case len(names) > 2:
		holds = fmt.Sprintf("%s, %s and more", names[0], names[1])
	case len(names) > 0:
		holds = strings.Join(names, " and ")
	}
	return fmt.Errorf("%s: %w: %s is a directory, not an object (it holds %s): no lease object can be stored there, and it is not a free lease either; the file driver keeps an object as a file, so remove or rename the directory (or use another prefix)",
		loc, driver.ErrInvalidKey, p, holds)
}
