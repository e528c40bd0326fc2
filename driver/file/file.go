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
// Each object is one file at dir/KEY holding exactly the bytes written.
// Its version, 16 random bytes new on every write, is kept beside it under
// dir/.bucketlease, with the locks and the staged writes. A write is staged
// in a temporary file, synced, and committed by one rename under an
// exclusive flock(2) on the key's lock file, held for the commit only, so a
// reader sees the old object or the new one, never a torn one. A process
// stopped while it holds that lock is never overtaken: a write that waits
// for it fails within a fifth of a second with a [LockedError] naming the
// process. A file's date is the later of its mtime and its ctime, so an
// object is dated no earlier than the moment it became visible; on Linux,
// metadata is kept in user extended attributes.
//
// flock(2) excludes processes on one machine only: on a network or FUSE
// file system the bucket declares driver.NoExclusion, so the lease refuses
// it, unless trust_network_flock=true ([Options].TrustNetworkFlock) says
// the mount's locks do exclude across machines.
//
// docs/drivers.md ("How file:// keeps objects", "What file:// promises
// under SIGSTOP") has the details: the version records, files copied in
// by hand, staged writes and their clean-up, keys that are prefixes of
// keys, the lock files, a stopped writer, dates, metadata and shared file
// systems.
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

// Locate is the Locate of the driver.Scheme for file:// URLs: the directory,
// cleaned (file:///var/b/db1/ and file:///var/b/./db1 are one), as the
// bucket, with no prefix; trust_network_flock says how far to trust the lock,
// not which directory it is.
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
	// machine that shares the directory's file system, so that the bucket
	// declares Conditional exclusion even on a network or FUSE file
	// system. It is the URL's trust_network_flock=true.
	TrustNetworkFlock bool
}

// Bucket is a directory used as a bucket.
type Bucket struct {
	root string
	caps driver.Capabilities
	// shared names the network or FUSE file system holding root, or is
	// "" for a local one; on a shared one the driver reports no service
	// time (see serviceTime).
	shared string
	mode   fs.FileMode // of every object written: the directory's read and write bits
	// noMetadata says why the bucket does not declare metadata (the file
	// system keeps no user extended attributes, or the system is not
	// Linux), or is nil where it does.
	noMetadata error
	// resolution is the Resolution of the service time the bucket
	// reports: how much earlier than the true time a file's modification
	// time may read, measured at Open (probeResolution).
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

// Capabilities declares Conditional exclusion and a conditional Delete,
// except on a network or FUSE file system not trusted by the user, where
// it declares NoExclusion with the reason (see docs/drivers.md, "How file:// keeps objects").
// It declares Metadata and ListMetadata where Open could keep a user
// extended attribute on a file in the bucket's directory (see "Object
// metadata" under "How file:// keeps objects" in docs/drivers.md; MetadataUnsupported says why
// not otherwise).
func (b *Bucket) Capabilities() driver.Capabilities { return b.caps }

// MetadataUnsupported returns why the bucket does not declare metadata
// (its file system keeps no user extended attributes, or the system is not
// Linux), or nil where it does. Objects written with PutOptions.Metadata
// on such a bucket are not stamped.
func (b *Bucket) MetadataUnsupported() error { return b.noMetadata }

// serviceTime is the service's time (driver.Attrs.Time) a Get or Put that
// got an answer returns: this machine's clock, read now, as the Date, and
// for a Get the file's modification time (modified). Every party of a
// local directory runs on this one machine, so its clock is the service's.
// On a network or FUSE file system it is the zero ServiceTime: the server
// stamps the modification time with its own clock, and each machine
// sharing the directory has a clock of its own, none of them the
// service's.
func (b *Bucket) serviceTime(modified time.Time) driver.ServiceTime {
	if b.shared != "" {
		return driver.ServiceTime{}
	}
	return driver.ServiceTime{Date: time.Now().Round(0), Modified: modified, Resolution: b.resolution}
}

// path maps op's key to its file. Begin has checked the key against
// driver.CheckKey, so it cannot leave the directory; the metadata folder is
// refused here.
func (b *Bucket) path(op *driver.Op, key string) (string, error) {
	if key == metaDir || strings.HasPrefix(key, metaDir+"/") {
		return "", op.Fail(driver.ErrInvalidKey, fmt.Errorf("key %q is reserved for the driver's own files", key))
	}
	return Path(b.root, key), nil
}

// missing classifies an error opening an object's file: the key is missing
// (ErrNotExist; a directory or a file where a directory would be counts as
// no object), or the bucket's directory itself is (ErrBucketNotExist).
func (b *Bucket) missing(err error) error {
	if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) && !errors.Is(err, syscall.EISDIR) {
		return nil
	}
	if _, serr := os.Stat(b.root); errors.Is(serr, fs.ErrNotExist) {
		return driver.ErrBucketNotExist
	}
	return driver.ErrNotExist
}

// osKind classifies an operating system error: permission denied (EACCES,
// EPERM) is driver.ErrPermission; anything else has no kind.
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
// key: p is a directory holding longer keys, or a segment of key is an
// object. It returns nil if neither holds.
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

// strayDir explains why key cannot be read, written or deleted when p is a
// directory that holds no stored key (an empty one, made by hand, say): it
// is not an object, nor the prefix of one, and no operation of the driver
// will ever make it either, so it is a permanent error (ErrInvalidKey),
// never a missing object, which would let a lease read as free and then
// fail on every write. A directory holding stored keys is the prefix of
// those keys: a Get of it finds no object (the driver contract), and a Put
// is refused by layoutConflict. It returns nil if p is not such a
// directory.
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
