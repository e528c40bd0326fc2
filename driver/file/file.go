//go:build unix

// Package file keeps a bucket in a local directory, with compare-and-swap
// that holds between goroutines and between processes on one machine.
// Importing it registers the scheme "file":
//
//	file:///abs/dir
//
// opens the directory /abs/dir (created if missing) as a bucket whose key
// prefix is empty, so the lease lives at /abs/dir/LEASE. The URL takes no
// query parameters and must name an absolute path.
//
// Each object is one file at dir/KEY holding a one-line header with its
// version, then the bytes. A write goes to a temporary file that is synced
// and renamed over the object under an exclusive flock(2) on a lock file for
// that key, so a reader sees the old object or the new one, never a torn
// one, and a crash mid-write leaves the old object in place. The version is
// 16 random bytes, new on every write even when the bytes are the same.
// Locks and temporary files live under dir/.bucketlease, which is not a
// valid key. A file without the header (written by hand) reads as an object
// whose version derives from its inode, size and modification time.
//
// Locks are advisory and local: a network file system that does not carry
// flock between machines gives no exclusion between them.
package file

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/mushroomdb/bucketlease/driver"
)

// Scheme is the URL scheme this package registers.
const Scheme = "file"

const (
	metaDir = ".bucketlease"
	magic   = "bucketlease-object v1 "
)

func init() { driver.Register(Scheme, open) }

func open(_ context.Context, u *url.URL) (driver.Bucket, string, error) {
	if _, err := driver.Params(u); err != nil {
		return nil, "", err
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
	b, err := Open(u.Path)
	if err != nil {
		return nil, "", err
	}
	return b, "", nil
}

// Bucket is a directory used as a bucket.
type Bucket struct {
	root string
}

// Open returns the bucket kept in dir, creating dir if needed.
func Open(dir string) (*Bucket, error) {
	dir = filepath.Clean(dir)
	for _, d := range []string{dir, filepath.Join(dir, metaDir, "locks"), filepath.Join(dir, metaDir, "tmp")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("file: create bucket directory: %w", err)
		}
	}
	return &Bucket{root: dir}, nil
}

// Capabilities declares Conditional exclusion and a conditional Delete.
func (b *Bucket) Capabilities() driver.Capabilities {
	return driver.Capabilities{Exclusion: driver.Conditional, ConditionalDelete: true}
}

func (b *Bucket) fail(op, key string, cond driver.Condition, kind, err error) error {
	return &driver.OpError{Driver: Scheme, Op: op, Key: key, Cond: cond, Kind: kind, Err: err}
}

// path maps a key to its file, refusing keys that would leave the directory
// or reach the metadata folder.
func (b *Bucket) path(key string) (string, error) {
	if key == "" || strings.HasPrefix(key, "/") || strings.HasSuffix(key, "/") {
		return "", fmt.Errorf("invalid key %q", key)
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "" || seg == "." || seg == ".." || strings.ContainsRune(seg, 0) {
			return "", fmt.Errorf("invalid key %q", key)
		}
	}
	if key == metaDir || strings.HasPrefix(key, metaDir+"/") {
		return "", fmt.Errorf("key %q is reserved for the driver's own files", key)
	}
	return filepath.Join(b.root, filepath.FromSlash(key)), nil
}

// Get opens the object and returns its body and version.
func (b *Bucket) Get(ctx context.Context, key string) (io.ReadCloser, driver.Version, error) {
	if err := ctx.Err(); err != nil {
		return nil, "", b.fail("get", key, driver.Condition{}, nil, err)
	}
	p, err := b.path(key)
	if err != nil {
		return nil, "", b.fail("get", key, driver.Condition{}, nil, err)
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", b.fail("get", key, driver.Condition{}, driver.ErrNotExist, nil)
	}
	if err != nil {
		return nil, "", b.fail("get", key, driver.Condition{}, nil, err)
	}
	r := bufio.NewReader(f)
	v, err := readVersion(f, r)
	if err != nil {
		f.Close()
		return nil, "", b.fail("get", key, driver.Condition{}, nil, err)
	}
	return readCloser{Reader: r, Closer: f}, v, nil
}

type readCloser struct {
	io.Reader
	io.Closer
}

// readVersion consumes the header of f through r and returns the version.
// A file without the header keeps all its bytes and gets a version derived
// from its identity.
func readVersion(f *os.File, r *bufio.Reader) (driver.Version, error) {
	head, err := r.Peek(len(magic) + 32 + 1)
	if err == nil && bytes.HasPrefix(head, []byte(magic)) && head[len(head)-1] == '\n' {
		v := driver.Version(head[len(magic) : len(magic)+32])
		_, err = r.Discard(len(head))
		return v, err
	}
	if err != nil && err != io.EOF && !errors.Is(err, bufio.ErrBufferFull) {
		return "", err
	}
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	var ino uint64
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		ino = uint64(sys.Ino)
	}
	sum := sha256.Sum256(fmt.Appendf(nil, "%d/%d/%d", ino, st.Size(), st.ModTime().UnixNano()))
	return driver.Version("h" + hex.EncodeToString(sum[:])[:31]), nil
}

// current returns the version stored at p, or "" if there is none; the
// caller holds the key's lock.
func current(p string) (driver.Version, error) {
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	return readVersion(f, bufio.NewReaderSize(f, 64))
}

// lock takes the exclusive flock for key and returns its release.
func (b *Bucket) lock(ctx context.Context, key string) (func(), error) {
	sum := sha256.Sum256([]byte(key))
	lp := filepath.Join(b.root, metaDir, "locks", hex.EncodeToString(sum[:16]))
	f, err := os.OpenFile(lp, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	// flock blocks without a context; a held lock is only ever held for
	// one small write, so wait in a goroutine and honour ctx meanwhile.
	done := make(chan error, 1)
	go func() { done <- syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }()
	select {
	case err := <-done:
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
	if err := ctx.Err(); err != nil {
		return "", b.fail("put", key, cond, nil, err)
	}
	p, err := b.path(key)
	if err != nil {
		return "", b.fail("put", key, cond, nil, err)
	}
	unlock, err := b.lock(ctx, key)
	if err != nil {
		return "", b.fail("put", key, cond, nil, err)
	}
	defer unlock()
	cur, err := current(p)
	if err != nil {
		return "", b.fail("put", key, cond, nil, err)
	}
	if !satisfied(cur, cond) {
		return "", b.fail("put", key, cond, driver.ErrPrecondition, nil)
	}
	var rnd [16]byte
	rand.Read(rnd[:])
	v := driver.Version(hex.EncodeToString(rnd[:]))
	if err := b.writeAtomic(p, v, data); err != nil {
		return "", b.fail("put", key, cond, nil, err)
	}
	return v, nil
}

// writeAtomic writes header and data to a synced temporary file and renames
// it over p, then syncs p's directory so the rename survives a crash.
func (b *Bucket) writeAtomic(p string, v driver.Version, data []byte) error {
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Join(b.root, metaDir, "tmp"), "put-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op after the rename
	_, err = io.WriteString(tmp, magic+string(v)+"\n")
	if err == nil {
		_, err = tmp.Write(data)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), p)
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

// Delete removes key if cond holds.
func (b *Bucket) Delete(ctx context.Context, key string, cond driver.Condition) error {
	if err := ctx.Err(); err != nil {
		return b.fail("delete", key, cond, nil, err)
	}
	if cond.Absent() {
		return b.fail("delete", key, cond, driver.ErrUnsupported, nil)
	}
	p, err := b.path(key)
	if err != nil {
		return b.fail("delete", key, cond, nil, err)
	}
	unlock, err := b.lock(ctx, key)
	if err != nil {
		return b.fail("delete", key, cond, nil, err)
	}
	defer unlock()
	cur, err := current(p)
	if err != nil {
		return b.fail("delete", key, cond, nil, err)
	}
	if cur == "" && cond.Unconditional() {
		return nil
	}
	if !satisfied(cur, cond) {
		return b.fail("delete", key, cond, driver.ErrPrecondition, nil)
	}
	if err := os.Remove(p); err != nil {
		return b.fail("delete", key, cond, nil, err)
	}
	return syncDir(filepath.Dir(p))
}
