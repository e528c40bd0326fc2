//go:build unix

// Package file keeps a bucket in a local directory, with compare-and-swap
// that holds between goroutines and between processes on one machine.
// Importing it registers the scheme "file":
//
//	file:///abs/dir
//
// opens the directory /abs/dir (created if missing) as a bucket whose key
// prefix is empty, so the lease lives at /abs/dir/LEASE. The URL must name
// an absolute path and takes one query parameter, trust_network_flock.
//
// Each object is one file at dir/KEY; its version (16 random bytes, new on
// every write), the locks and staged writes live under dir/.bucketlease. A
// write is staged, synced and committed by one rename under flock(2) on the
// key's lock file, so a reader never sees a torn object; a write waiting on
// a stopped holder fails with a [LockedError]. flock(2) excludes on one
// machine only, so on a network or FUSE file system the bucket declares
// driver.NoExclusion unless trust_network_flock=true.
//
// docs/drivers.md ("How file:// keeps objects", "What file:// promises
// under SIGSTOP") has the details.
package file

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/multipart"
)

// Scheme is the URL scheme this package registers.
const Scheme = "file"

// TrustParam is the URL parameter that asserts flock(2) excludes across
// the machines sharing a network or FUSE file system.
const TrustParam = "trust_network_flock"

func init() {
	driver.Register(Scheme, driver.Scheme{Open: OpenURL, Locate: Locate})
}

// Locate is the Locate of the driver.Scheme for file:// URLs: the cleaned
// directory is the bucket, with no prefix.
func Locate(u *url.URL) (bucket, prefix, endpoint string, err error) {
	return filepath.Clean(u.Path), "", "", nil
}

// OpenURL is the Open of the driver.Scheme for file:///abs/dir URLs, which
// init registers; a program may register it under a scheme of its own too.
func OpenURL(_ context.Context, u *url.URL) (driver.Bucket, string, error) {
	q, err := driver.Params(u, TrustParam)
	if err != nil {
		return nil, "", err
	}
	var o Options
	if v := q.Get(TrustParam); v != "" {
		if o.TrustNetworkFlock, err = strconv.ParseBool(v); err != nil {
			return nil, "", fmt.Errorf("%s=%q is not true or false", TrustParam, v)
		}
	}
	if u.User != nil {
		return nil, "", errors.New("file URLs take no user info: use file:///abs/dir")
	}
	if u.Host != "" && u.Host != "localhost" {
		return nil, "", fmt.Errorf("file URLs name a local directory: use file:///abs/dir (three slashes), not host %q", u.Host)
	}
	if !filepath.IsAbs(u.Path) {
		return nil, "", errors.New("file URLs need an absolute path: file:///abs/dir")
	}
	b, err := OpenWith(u.Path, o)
	if err != nil {
		return nil, "", err
	}
	return b, "", nil
}

var (
	_ driver.Bucket           = (*Bucket)(nil)
	_ multipart.PendingLister = (*Bucket)(nil)
)

// Options tune OpenWith.
type Options struct {
	// TrustNetworkFlock asserts that flock(2) excludes across every
	// machine sharing a network or FUSE file system (trust_network_flock).
	TrustNetworkFlock bool
}

// Bucket is a directory used as a bucket.
type Bucket struct {
	root       string
	caps       driver.Capabilities
	shared     string      // the network or FUSE file system type, "" if local
	mode       fs.FileMode // of every object written: the directory's read and write bits
	noMetadata error       // why metadata is not declared, or nil
	resolution time.Duration
}

// Open returns the bucket kept in dir, creating dir if needed, with the
// default Options.
func Open(dir string) (*Bucket, error) { return OpenWith(dir, Options{}) }

// OpenWith returns the bucket kept in dir, creating dir if needed. On a
// network or FUSE file system it declares driver.NoExclusion, with the
// reason, unless o.TrustNetworkFlock is set.
func OpenWith(dir string, o Options) (*Bucket, error) {
	dir = filepath.Clean(dir)
	for _, d := range []string{dir, filepath.Join(dir, metaDir, "locks"), filepath.Join(dir, metaDir, "tmp")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			if k := osKind(err); k != nil {
				return nil, fmt.Errorf("file: create bucket directory: %w (%w)", err, k)
			}
			return nil, fmt.Errorf("file: create bucket directory: %w", err)
		}
	}
	caps := driver.Capabilities{Exclusion: driver.Conditional, ConditionalDelete: true}
	fsType, err := sharedFS(dir)
	if err != nil {
		return nil, fmt.Errorf("file: reading the file system type of %s: %w", dir, err)
	}
	if fsType != "" && !o.TrustNetworkFlock {
		caps = driver.Capabilities{Exclusion: driver.NoExclusion, Reason: fmt.Sprintf(
			"%s is on a %s file system, where flock(2) may not exclude processes on other machines; "+
				"if every machine that uses it gets working locks, add ?%s=true to the file:// URL", dir, fsType, TrustParam)}
	}
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("file: %w", err)
	}
	b := &Bucket{root: dir, caps: caps, shared: fsType, mode: st.Mode().Perm() & 0o666, resolution: fallbackResolution}
	if fsType == "" {
		if r, err := probeResolution(filepath.Join(dir, metaDir, "tmp")); err == nil {
			b.resolution = r
		}
	}
	if err := probeMetadata(filepath.Join(dir, metaDir, "tmp")); err != nil {
		b.noMetadata = err
	} else {
		b.caps.Metadata, b.caps.ListMetadata = true, true
	}
	return b, nil
}

// Capabilities declares Conditional exclusion (NoExclusion on an untrusted
// shared file system) and a conditional Delete, and Metadata where the
// directory keeps user extended attributes.
func (b *Bucket) Capabilities() driver.Capabilities { return b.caps }

// MetadataUnsupported returns why the bucket does not declare metadata, or
// nil where it does.
func (b *Bucket) MetadataUnsupported() error { return b.noMetadata }

// serviceTime is the service time of an answer: on a local directory every
// party shares this machine's clock, so it is the service's. On a shared
// file system it is zero: the server stamps mtimes with its own clock and
// no machine's clock is the service's.
func (b *Bucket) serviceTime(modified time.Time) driver.ServiceTime {
	if b.shared != "" {
		return driver.ServiceTime{}
	}
	return driver.ServiceTime{Date: time.Now().Round(0), Modified: modified, Resolution: b.resolution}
}

// path maps a key to its file (Begin has checked the key, so it cannot
// leave the directory), refusing the driver's own folder.
func (b *Bucket) path(op *driver.Op, key string) (string, error) {
	if key == metaDir || strings.HasPrefix(key, metaDir+"/") {
		return "", op.Fail(driver.ErrInvalidKey, fmt.Errorf("key %q is reserved for the driver's own files", key))
	}
	return Path(b.root, key), nil
}

// missing classifies an error opening an object's file as ErrNotExist,
// ErrBucketNotExist, or nil.
func (b *Bucket) missing(err error) error {
	if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) && !errors.Is(err, syscall.EISDIR) {
		return nil
	}
	if _, serr := os.Stat(b.root); errors.Is(serr, fs.ErrNotExist) {
		return driver.ErrBucketNotExist
	}
	return driver.ErrNotExist
}

// osKind returns driver.ErrPermission for a permission error, else nil.
func osKind(err error) error {
	if errors.Is(err, fs.ErrPermission) {
		return driver.ErrPermission
	}
	return nil
}

// rootMissing returns ErrBucketNotExist if the bucket's directory is gone,
// so that a write never recreates it.
func (b *Bucket) rootMissing() error {
	if _, err := os.Stat(b.root); errors.Is(err, fs.ErrNotExist) {
		return driver.ErrBucketNotExist
	}
	return nil
}

// layoutConflict explains why key cannot be stored at p because of another
// key, or returns nil.
func (b *Bucket) layoutConflict(key string, p string) error {
	if err := strayDir(key, p); err != nil {
		return err
	}
	if st, err := os.Lstat(p); err == nil && st.IsDir() {
		return fmt.Errorf("key %q is a prefix of stored keys (%q): the file driver keeps an object as a file, "+
			"so its key cannot also be a directory; delete those keys first, or use another key", key, key+"/…")
	}
	segs := strings.Split(key, "/")
	for i := 1; i < len(segs); i++ {
		parent := strings.Join(segs[:i], "/")
		st, err := os.Lstat(filepath.Join(b.root, filepath.FromSlash(parent)))
		if err == nil && !st.IsDir() {
			return fmt.Errorf("key %q lies under key %q, which is a stored object: the file driver keeps an object as a file, "+
				"so it cannot also be a directory; delete %q first, or use another key", key, parent, parent)
		}
		if err != nil {
			break
		}
	}
	return nil
}

// strayDir explains why key cannot be used when p is a directory holding no
// stored key: a permanent error, never a missing object, which would let a
// lease read as free and then fail on every write. It returns nil otherwise.
func strayDir(key, p string) error {
	st, err := os.Lstat(p)
	if err != nil || !st.IsDir() {
		return nil
	}
	holds := false
	_ = filepath.WalkDir(p, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			holds = true
			return fs.SkipAll
		}
		return nil
	})
	if holds {
		return nil
	}
	return fmt.Errorf("%s (key %q) is a directory, not an object, and holds no stored key: the file driver keeps an object as a file; "+
		"remove or rename the directory", p, key)
}
