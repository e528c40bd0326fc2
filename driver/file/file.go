//go:build unix

// Package file keeps a bucket in a local directory, with compare-and-swap
// that holds between goroutines and between processes on one machine.
// Importing it registers the scheme "file":
//
//	file:///abs/dir
//
// opens the directory /abs/dir (created if missing) as a bucket whose key
// prefix is empty, so the lease lives at /abs/dir/LEASE. The URL must name
// an absolute path and takes one query parameter, trust_network_flock (see
// below).
//
// Each object is one file at dir/KEY holding exactly the bytes written, so
// that a file the driver wrote is the file its writer gave it (psql < KEY
// reads no stray line). Its version is kept beside it, in a record per key
// under dir/.bucketlease/versions, which names the version of the data file
// by the file's identity (device, inode, size and modification time). A write goes to a
// temporary file that is synced, then, under an exclusive flock(2) on a lock
// file for that key, the key's record is rewritten to name both the current
// file's version and the new file's, and the temporary file is renamed over
// the object: one rename commits the write. A reader therefore sees the old
// object or the new one, never a torn one, and a crash at any point leaves
// the old file with its old version or the new file with its new version:
// the new file's identity is in the record before its bytes can be at
// dir/KEY, and the old file's stays there until the next write. The version
// is 16 random bytes, new on every write even when the bytes are the same.
//
// A file at dir/KEY that no record names (copied in or edited by a person,
// or written by hand) reads as an object whose version derives from its
// identity, so a condition naming a version read before the change never
// holds, and IfAbsent on it is refused. A file written by an earlier version
// of this driver, which began with a "bucketlease-object v1 VERSION" line,
// reads as the bytes after that line, with that version; the next write of
// the key stores it in the layout above.
//
// Locks, records and temporary files live under dir/.bucketlease, which is
// not a valid key. Lock files (empty, one per key ever written) are never removed:
// unlinking one that another process is about to lock would give the two
// processes two different locks. The lease's scratch keys have random
// names, so every acquire that writes adds one lock file (and Break and a
// lease's first streamed write one each): remove dir/.bucketlease/locks/*
// only while no process uses the directory. A key's record goes with the
// key when it is deleted. Objects are created with the read and
// write bits of the bucket directory (a 0755 directory gives 0644 objects,
// 0750 gives 0640), so whoever may read the directory may read the lease.
//
// # Staged writes
//
// A write in progress is a temporary file dir/.bucketlease/tmp/put-*,
// beside a put-*.key file naming its key and process, and its writer holds
// an exclusive flock(2) on it until it is renamed or removed. A writer that
// dies (SIGKILL, a crash) leaves it, unlocked: the next Put or PutStream on
// the bucket, from any process, removes every staged file no process has
// locked, and never one a live writer is writing. ListPending (the
// driver.PendingLister that bucketlease show uses) lists the staged files,
// live or left by a dead writer.
//
// Keys follow driver.CheckKey. A key's segments before the last are
// directories, so a key cannot be stored while it is a prefix of a stored
// key ("db1" while "db1/LEASE" exists), nor under a stored key ("db1/LEASE"
// while "db1" exists): Put refuses both with driver.ErrInvalidKey, saying
// which key is in the way. A Get or an unconditional Delete of such a key
// finds no object (driver.ErrNotExist, success), and once the other key is
// deleted (Delete removes the directories it leaves empty) the key can be
// written. A key whose file is a directory holding no stored key (an empty
// directory made by hand, say) is neither: Get, Put and Delete of it fail
// with driver.ErrInvalidKey, naming the path and saying it is a directory
// to remove or rename.
//
// # Shared file systems
//
// Locks are advisory and local: flock(2) excludes processes on one
// machine, but on a network or FUSE file system (NFS, SMB/CIFS, 9p, Ceph,
// Lustre, and bucket mounts such as s3fs, gcsfuse or rclone mount) two
// machines may get no exclusion at all, and no probe from one machine can
// see it. On Linux, macOS and FreeBSD, Open reads the directory's file
// system type with statfs(2); on such a file system the bucket declares
// driver.NoExclusion, with a Capabilities.Reason naming the file system and
// the parameter below, so the lease refuses it. A user who knows that
// flock(2) does exclude across the machines that share it (an NFSv4 mount with working locks, say) asserts so with
//
//	file:///abs/dir?trust_network_flock=true
//
// (Options.TrustNetworkFlock in the Go API), and the bucket declares
// Conditional exclusion again. On other systems the file system type is not
// checked.
package file

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/mushroomdb/bucketlease/driver"
)

// Scheme is the URL scheme this package registers.
const Scheme = "file"

const metaDir = ".bucketlease"

// TrustParam is the URL parameter that asserts flock(2) excludes across
// the machines sharing a network or FUSE file system.
const TrustParam = "trust_network_flock"

func init() {
	driver.Register(Scheme, OpenURL)
	driver.RegisterLocator(Scheme, Locate)
}

// Locate is the driver.Locator for file:// URLs: the directory, cleaned
// (file:///var/b/db1/ and file:///var/b/./db1 are one), as the bucket,
// with no prefix; trust_network_flock says how far to trust the lock, not
// which directory it is.
func Locate(u *url.URL) (driver.Place, error) {
	return driver.Place{Bucket: filepath.Clean(u.Path)}, nil
}

// OpenURL is the driver.Opener for file:///abs/dir URLs, which init
// registers with driver.Register; a custom driver.Mux can register it too.
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
	_ driver.Streamer      = (*Bucket)(nil)
	_ driver.Lister        = (*Bucket)(nil)
	_ driver.PendingLister = (*Bucket)(nil)
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
	mode fs.FileMode // of every object written: the directory's read and write bits
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
	return &Bucket{root: dir, caps: caps, mode: st.Mode().Perm() & 0o666}, nil
}

// Capabilities declares Conditional exclusion and a conditional Delete,
// except on a network or FUSE file system not trusted by the user, where
// it declares NoExclusion with the reason (see the package documentation).
func (b *Bucket) Capabilities() driver.Capabilities { return b.caps }

// path maps a key to its file. Begin has checked the key against
// driver.CheckKey, so it cannot leave the directory; the metadata folder is
// refused here.
func (b *Bucket) path(op *driver.Op) (string, error) {
	key := op.Key
	if key == metaDir || strings.HasPrefix(key, metaDir+"/") {
		return "", op.Fail(driver.ErrInvalidKey, fmt.Errorf("key %q is reserved for the driver's own files", key))
	}
	return filepath.Join(b.root, filepath.FromSlash(key)), nil
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

// Get opens the object and returns its body and version.
func (b *Bucket) Get(ctx context.Context, key string) (io.ReadCloser, driver.Version, error) {
	op, err := driver.Begin(ctx, b.caps, Scheme, driver.OpGet, key, driver.Condition{})
	if err != nil {
		return nil, "", err
	}
	p, err := b.path(op)
	if err != nil {
		return nil, "", err
	}
	f, err := os.Open(p)
	if err == nil {
		if st, serr := f.Stat(); serr == nil && st.IsDir() {
			f.Close()
			if derr := strayDir(key, p); derr != nil {
				return nil, "", op.Fail(driver.ErrInvalidKey, derr)
			}
			err = syscall.EISDIR
		}
	}
	if err != nil {
		kind := b.missing(err)
		if kind != nil {
			return nil, "", op.Fail(kind, nil)
		}
		return nil, "", op.Fail(osKind(err), err)
	}
	st, err := f.Stat()
	var v driver.Version
	var skip int64
	if err == nil {
		v, skip, _, err = b.versionOf(key, f, st)
	}
	if err == nil && skip > 0 {
		_, err = f.Seek(skip, io.SeekStart)
	}
	if err != nil {
		f.Close()
		return nil, "", op.Fail(osKind(err), err)
	}
	return f, v, nil
}

// current returns the version stored at p for key, or "" if there is none
// (no file, a directory, or a file where a directory would be), and the
// entry of key's record that names it, if one does; the caller holds the
// key's lock.
func (b *Bucket) current(key, p string) (driver.Version, *entry, error) {
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return "", nil, nil
	}
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", nil, err
	}
	if st.IsDir() {
		return "", nil, nil
	}
	v, _, e, err := b.versionOf(key, f, st)
	return v, e, err
}

// lock takes the exclusive flock for key and returns its release.
func (b *Bucket) lock(ctx context.Context, key string) (func(), error) {
	sum := sha256.Sum256([]byte(key))
	return flockPath(ctx, filepath.Join(b.root, metaDir, "locks", hex.EncodeToString(sum[:16])), syscall.LOCK_EX)
}

// flockPath opens (creating it if needed) the lock file lp, takes the
// flock how (LOCK_EX or LOCK_SH) on it, and returns its release.
func flockPath(ctx context.Context, lp string, how int) (func(), error) {
	f, err := os.OpenFile(lp, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	// flock blocks without a context; a held lock is only ever held for
	// one small write, so wait in a goroutine and honour ctx meanwhile.
	done := make(chan error, 1)
	go func() { done <- syscall.Flock(int(f.Fd()), how) }()
	select {
	case err := <-done:
		if err == nil {
			err = ctx.Err() // ended while the lock was being taken
		}
		if err != nil {
			f.Close()
			return nil, err
		}
		return func() { f.Close() }, nil // closing the descriptor releases the lock
	case <-ctx.Done():
		go func() { <-done; f.Close() }()
		return nil, ctx.Err()
	}
}

// satisfied reports whether cond holds for the stored version cur ("" when
// the key is missing).
func satisfied(cur driver.Version, cond driver.Condition) bool {
	if cond.Absent() {
		return cur == ""
	}
	if v, ok := cond.Match(); ok {
		return cur != "" && cur == v
	}
	return true
}

// Put writes data to key atomically if cond holds.
func (b *Bucket) Put(ctx context.Context, key string, data []byte, cond driver.Condition) (driver.Version, error) {
	op, err := driver.Begin(ctx, b.caps, Scheme, driver.OpPut, key, cond)
	if err != nil {
		return "", err
	}
	p, err := b.path(op)
	if err != nil {
		return "", err
	}
	if kind := b.rootMissing(); kind != nil {
		return "", op.Fail(kind, nil)
	}
	b.sweep()
	unlock, err := b.lock(ctx, key)
	if err != nil {
		return "", op.Fail(osKind(err), err)
	}
	defer unlock()
	cur, keep, err := b.current(key, p)
	if err != nil {
		return "", op.Fail(osKind(err), err)
	}
	if !satisfied(cur, cond) {
		return "", op.Fail(driver.ErrPrecondition, nil)
	}
	if err := b.layoutConflict(key, p); err != nil {
		return "", op.Fail(driver.ErrInvalidKey, err)
	}
	v := newVersion()
	s, err := b.stage(ctx, key, func(f *os.File) error {
		// In chunks, so that a cancelled context stops a large write.
		for rest := data; len(rest) > 0; {
			if err := ctx.Err(); err != nil {
				return err
			}
			n := min(len(rest), writeChunk)
			if _, err := f.Write(rest[:n]); err != nil {
				return err
			}
			rest = rest[n:]
		}
		return nil
	})
	if err == nil {
		err = b.commit(ctx, key, s, p, v, keep)
	}
	if err != nil {
		if s != nil {
			s.discard()
		}
		if cerr := b.layoutConflict(key, p); cerr != nil {
			return "", op.Fail(driver.ErrInvalidKey, cerr)
		}
		return "", op.Fail(osKind(err), err)
	}
	s.done()
	return v, nil
}

// writeChunk is how much Put and PutStream write between two looks at the
// context.
const writeChunk = 1 << 20

func newVersion() driver.Version {
	var rnd [16]byte
	rand.Read(rnd[:])
	return driver.Version(hex.EncodeToString(rnd[:]))
}

// PutStream writes the body read from r to a temporary file in the
// bucket's own directory (same file system, so the rename is atomic), in
// parts of opts.Size() bytes with opts.Allow called before each and before
// the commit, then takes the key's lock and renames the file over the
// object only if cond holds and ctx has not ended. On any failure the
// temporary file is removed before it returns, and the error's
// *driver.UploadError says whether that succeeded.
func (b *Bucket) PutStream(ctx context.Context, key string, r io.Reader, cond driver.Condition, opts *driver.StreamOptions) (driver.Version, error) {
	op, err := driver.Begin(ctx, b.caps, Scheme, driver.OpPut, key, cond)
	if err != nil {
		return "", err
	}
	p, err := b.path(op)
	if err != nil {
		return "", err
	}
	if kind := b.rootMissing(); kind != nil {
		return "", op.Fail(kind, nil)
	}
	b.sweep()
	v := newVersion()
	var refusal error // the kind of a failure that is not the file system's
	s, err := b.stage(ctx, key, func(f *os.File) error {
		buf := make([]byte, opts.Size())
		for no := 1; ; no++ {
			if err := opts.Allow(); err != nil {
				return fmt.Errorf("MayStart refused part %d: %w", no, err)
			}
			n, rerr := driver.ReadPart(ctx, r, buf)
			if _, err := f.Write(buf[:n]); err != nil {
				return err
			}
			if rerr == io.EOF {
				return nil
			}
			if rerr != nil {
				return fmt.Errorf("reading the body: %w", rerr)
			}
		}
	})
	if err == nil {
		if aerr := opts.Allow(); aerr != nil {
			err = fmt.Errorf("MayStart refused the commit: %w", aerr)
		}
	}
	if err == nil {
		err, refusal = b.commitStaged(ctx, op, s, p, v)
	}
	if err == nil {
		s.done()
		return v, nil
	}
	ue := &driver.UploadError{Err: err}
	if s != nil {
		ue.Staged, ue.Upload = true, "temporary file "+s.name
		if rerr := s.discard(); rerr == nil {
			ue.Aborted = true
		} else {
			ue.AbortErr = rerr
		}
	}
	if refusal == nil {
		refusal = osKind(err)
	}
	return "", op.Fail(refusal, ue)
}

// commitStaged commits the staged file s as version v of the object at p
// under the key's lock if op's condition holds; a refusal returns its kind
// as well.
func (b *Bucket) commitStaged(ctx context.Context, op *driver.Op, s *staged, p string, v driver.Version) (err, kind error) {
	unlock, err := b.lock(ctx, op.Key)
	if err != nil {
		return err, nil
	}
	defer unlock()
	cur, keep, err := b.current(op.Key, p)
	if err != nil {
		return err, nil
	}
	if !satisfied(cur, op.Cond) {
		return errors.New("the condition did not hold at the commit"), driver.ErrPrecondition
	}
	if err := b.layoutConflict(op.Key, p); err != nil {
		return err, driver.ErrInvalidKey
	}
	if err := b.commit(ctx, op.Key, s, p, v, keep); err != nil {
		if cerr := b.layoutConflict(op.Key, p); cerr != nil {
			return cerr, driver.ErrInvalidKey
		}
		return err, nil
	}
	return nil, nil
}

// commit makes the staged file s the object at p, with version v; the
// caller holds key's lock, and keep is the record's entry that names what p
// holds now, if one does. The record is rewritten first, naming the file at
// p (keep) and s, and then s is renamed over p: a crash before the rename
// leaves the old file, which the record still names with its version, and
// a crash after it the new file with v. Only the rename changes the object.
func (b *Bucket) commit(ctx context.Context, key string, s *staged, p string, v driver.Version, keep *entry) error {
	entries := make([]entry, 0, 2)
	if keep != nil {
		entries = append(entries, *keep)
	}
	entries = append(entries, entry{v: v, id: s.id})
	if err := b.writeRecord(key, entries); err != nil {
		return err
	}
	return b.install(ctx, s.name, p)
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

// stage writes the body (written by body) to a new staged file in the
// bucket's own directory (see newStaged), syncs it and notes its identity.
// On an error the staged file is returned too (if it was created), for the
// caller to discard.
func (b *Bucket) stage(ctx context.Context, key string, body func(f *os.File) error) (*staged, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s, err := b.newStaged(ctx, key)
	if err != nil {
		return nil, err
	}
	err = body(s.f)
	if err == nil {
		err = ctx.Err()
	}
	if err == nil {
		err = s.f.Sync()
	}
	if err == nil {
		var st fs.FileInfo
		if st, err = s.f.Stat(); err == nil {
			s.id = identOf(st)
		}
	}
	return s, err
}

// install renames the staged file tmp over p, unless ctx has ended, and
// syncs p's directory so the rename survives a crash; the caller holds the
// key's lock. A Delete that removes an emptied directory between the
// MkdirAll and the rename is retried. It is the one step that changes the
// object: once ctx has ended it is not taken.
func (b *Bucket) install(ctx context.Context, tmp, p string) error {
	dir := filepath.Dir(p)
	var err error
	for attempt := 0; ; attempt++ {
		// A Delete that prunes emptied directories may remove dir, or a
		// parent of it, between MkdirAll and Rename, or while MkdirAll
		// creates it: both then fail with ErrNotExist, and are tried again.
		err = os.MkdirAll(dir, 0o755)
		if err == nil {
			if err = ctx.Err(); err != nil {
				break
			}
			err = os.Rename(tmp, p)
		}
		if errors.Is(err, fs.ErrNotExist) && attempt < 10 {
			continue
		}
		break
	}
	if err == nil {
		err = syncDir(dir)
	}
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Delete removes key if cond holds, then the directories the removal left
// empty, up to the bucket's own.
func (b *Bucket) Delete(ctx context.Context, key string, cond driver.Condition) error {
	op, err := driver.Begin(ctx, b.caps, Scheme, driver.OpDelete, key, cond)
	if err != nil {
		return err
	}
	p, err := b.path(op)
	if err != nil {
		return err
	}
	if kind := b.rootMissing(); kind != nil {
		return op.Fail(kind, nil)
	}
	unlock, err := b.lock(ctx, key)
	if err != nil {
		return op.Fail(osKind(err), err)
	}
	defer unlock()
	if derr := strayDir(key, p); derr != nil {
		return op.Fail(driver.ErrInvalidKey, derr)
	}
	cur, _, err := b.current(key, p)
	if err != nil {
		return op.Fail(osKind(err), err)
	}
	if cur == "" && cond.Unconditional() {
		return nil
	}
	if !satisfied(cur, cond) {
		return op.Fail(driver.ErrPrecondition, nil)
	}
	if err := os.Remove(p); err != nil {
		return op.Fail(osKind(err), err)
	}
	// The record goes with the file; one left by a crash here names a
	// file that is gone, which no file at p will match.
	if err := os.Remove(b.recordPath(key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return op.Fail(osKind(err), err)
	}
	// A concurrent Delete of a neighbour may have pruned the directory
	// this removal emptied: then the entry is gone with it.
	if err := syncDir(filepath.Dir(p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return op.Fail(osKind(err), err)
	}
	// Remove emptied parents, so that a key that was a prefix of this one
	// can be written again. Remove fails on a directory that is not empty
	// (another key lives there), which ends the walk.
	for d := filepath.Dir(p); d != b.root && strings.HasPrefix(d, b.root+string(filepath.Separator)); d = filepath.Dir(d) {
		if os.Remove(d) != nil {
			break
		}
	}
	return nil
}

// List yields the objects whose keys start with prefix, in lexical order
// of key: the keys as they are when the iteration starts, each object read
// (version, size, modification time) as it is yielded; one removed
// meanwhile is left out. The driver's own directory is never listed.
func (b *Bucket) List(ctx context.Context, prefix string) iter.Seq2[driver.Object, error] {
	return func(yield func(driver.Object, error) bool) {
		op, err := driver.BeginList(ctx, Scheme, prefix)
		if err != nil {
			yield(driver.Object{}, err)
			return
		}
		fail := func(kind, err error) { yield(driver.Object{}, op.Fail(kind, err)) }
		if kind := b.rootMissing(); kind != nil {
			fail(kind, nil)
			return
		}
		// Walk only the directory the prefix's complete segments name.
		start := b.root
		if i := strings.LastIndex(prefix, "/"); i >= 0 {
			start = filepath.Join(b.root, filepath.FromSlash(prefix[:i]))
		}
		var keys []string
		err = filepath.WalkDir(start, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
					return nil
				}
				return err
			}
			if cerr := ctx.Err(); cerr != nil {
				return cerr
			}
			rel, rerr := filepath.Rel(b.root, path)
			if rerr != nil || rel == "." {
				return nil
			}
			key := filepath.ToSlash(rel)
			if d.IsDir() {
				if key == metaDir || !strings.HasPrefix(key+"/", prefix) && !strings.HasPrefix(prefix, key+"/") {
					return filepath.SkipDir
				}
				return nil
			}
			if d.Type().IsRegular() && strings.HasPrefix(key, prefix) {
				keys = append(keys, key)
			}
			return nil
		})
		if err != nil {
			fail(osKind(err), err)
			return
		}
		slices.Sort(keys)
		for _, key := range keys {
			if err := ctx.Err(); err != nil {
				fail(nil, err)
				return
			}
			o, ok, err := b.stat(key)
			if err != nil {
				fail(osKind(err), fmt.Errorf("reading %q: %w", key, err))
				return
			}
			if ok && !yield(o, nil) {
				return
			}
		}
	}
}

// stat reads key's version, size and modification time; ok is false if it
// is no longer there.
func (b *Bucket) stat(key string) (driver.Object, bool, error) {
	f, err := os.Open(filepath.Join(b.root, filepath.FromSlash(key)))
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return driver.Object{}, false, nil
	}
	if err != nil {
		return driver.Object{}, false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return driver.Object{}, false, err
	}
	if st.IsDir() {
		return driver.Object{}, false, nil
	}
	v, skip, _, err := b.versionOf(key, f, st)
	if err != nil {
		return driver.Object{}, false, err
	}
	return driver.Object{Key: key, Size: st.Size() - skip, Version: v, ModTime: st.ModTime()}, true, nil
}
