package file

import (
	"errors"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mushroomdb/bucketlease/driver"
)

// Dir is the cleaned directory a file:// URL names, or "" when only
// opening the driver could judge the URL. It creates nothing.
func Dir(u *url.URL) string {
	if u.Path == "" || !filepath.IsAbs(u.Path) || u.Host != "" || u.User != nil || u.Fragment != "" {
		return ""
	}
	for k := range u.Query() {
		if k != "trust_network_flock" { // TrustParam, which only Unix builds define
			return ""
		}
	}
	return filepath.Clean(u.Path)
}

// Absent reports whether nothing is stored at key in the bucket kept in
// dir, without opening the bucket or creating anything.
func Absent(dir, key string) bool {
	_, err := os.Lstat(Path(dir, key))
	return errors.Is(err, fs.ErrNotExist)
}

// KeyDir reports whether key, in the directory the file:// URL u names,
// is a directory, and returns its path and up to three of its names.
func KeyDir(u *url.URL, key string) (path string, names []string, isDir bool) {
	if u.Path == "" || !filepath.IsAbs(u.Path) || u.Host != "" || u.User != nil || u.Fragment != "" {
		return "", nil, false
	}
	path = Path(u.Path, key)
	fi, err := os.Lstat(path)
	if err != nil || !fi.IsDir() {
		return "", nil, false
	}
	if f, err := os.Open(path); err == nil {
		names, _ = f.Readdirnames(3) // a few, to say what is in it; bounded
		f.Close()
		slices.Sort(names)
	}
	return path, names, true
}

// Peek lists the objects directly in dir whose names begin with
// namePrefix, sorted, reading at most limit entries, without opening the
// bucket or creating anything.
func Peek(dir, namePrefix string, limit int) []driver.Object {
	f, err := os.Open(dir)
	if err != nil {
		return nil
	}
	defer f.Close()
	var found []driver.Object
	for range limit / 100 {
		entries, err := f.ReadDir(100)
		for _, d := range entries {
			if name := d.Name(); strings.HasPrefix(name, namePrefix) && d.Type().IsRegular() {
				o := driver.Object{Key: name}
				if fi, err := d.Info(); err == nil {
					o.ModTime = fi.ModTime()
				}
				found = append(found, o)
			}
		}
		if err != nil || len(entries) == 0 {
			break
		}
	}
	slices.SortFunc(found, func(a, b driver.Object) int { return strings.Compare(a.Key, b.Key) })
	return found
}
