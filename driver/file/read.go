//go:build unix

package file

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
)

// Get opens the object and returns its body, its version, the service's
// time and, under opts.Metadata, the metadata kept on that file.
func (b *Bucket) Get(ctx context.Context, key string, opts driver.GetOptions) (io.ReadCloser, driver.Attrs, error) {
	op, err := driver.BeginGet(ctx, Scheme, key)
	if err != nil {
		return nil, driver.Attrs{}, err
	}
	p, err := b.path(op, key)
	if err != nil {
		return nil, driver.Attrs{}, err
	}
	f, err := os.Open(p)
	if err == nil {
		if st, serr := f.Stat(); serr == nil && st.IsDir() {
			f.Close()
			if derr := strayDir(key, p); derr != nil {
				return nil, driver.Attrs{}, op.Fail(driver.ErrInvalidKey, derr)
			}
			err = syscall.EISDIR
		}
	}
	if err != nil {
		var a driver.Attrs
		kind := b.missing(err)
		if kind == driver.ErrNotExist {
			a.Time = b.serviceTime(time.Time{})
		}
		if kind != nil {
			return nil, a, op.Fail(kind, nil)
		}
		return nil, a, op.Fail(osKind(err), err)
	}
	st, err := f.Stat()
	var v driver.Version
	var skip int64
	var named *entry
	if err == nil {
		v, skip, named, err = b.versionOf(key, f, st)
	}
	if err == nil && skip > 0 {
		_, err = f.Seek(skip, io.SeekStart)
	}
	var md driver.Metadata
	if err == nil && b.caps.Metadata && opts.Metadata {
		md, err = readMetadata(f) // of the file whose body is returned
	}
	if err != nil {
		f.Close()
		return nil, driver.Attrs{}, op.Fail(osKind(err), err)
	}
	return f, driver.Attrs{Version: v, Metadata: md, Time: b.serviceTime(dateOf(st, named != nil))}, nil
}

// current returns the version stored at p for key ("" for none) and the
// record entry naming it, if any; the caller holds the key's lock.
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

// List yields the objects whose keys start with prefix, in lexical order,
// each read as it is yielded; one removed meanwhile is left out.
func (b *Bucket) List(ctx context.Context, prefix string) iter.Seq2[driver.Object, error] {
	return driver.Listing(ctx, Scheme, prefix, func(op *driver.Op, yield func(driver.Object, error) bool) {
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
		err := filepath.WalkDir(start, func(path string, d fs.DirEntry, err error) error {
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
	})
}

// dateOf is the time the driver states an object was written; committed
// says a record names the file (the driver wrote it). Such a file is dated
// by the later of its mtime and ctime: the mtime may predate the rename
// that made it visible (a writer stopped in between), so a late write
// would read as made in time, while the ctime is stamped by the rename or
// the chmod after it. A file no record names is dated by its mtime.
func dateOf(st fs.FileInfo, committed bool) time.Time {
	mod := st.ModTime()
	if !committed {
		return mod
	}
	if changed, ok := changeTime(st); ok && changed.After(mod) {
		return changed
	}
	return mod
}

// stat reads key's version, size and modification time; ok is false if it
// is no longer there.
func (b *Bucket) stat(key string) (driver.Object, bool, error) {
	f, err := os.Open(Path(b.root, key))
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
	v, skip, named, err := b.versionOf(key, f, st)
	if err != nil {
		return driver.Object{}, false, err
	}
	o := driver.Object{Key: key, Size: st.Size() - skip, Version: v, ModTime: dateOf(st, named != nil)}
	if b.caps.ListMetadata {
		if o.Metadata, err = readMetadata(f); err != nil {
			return driver.Object{}, false, err
		}
	}
	return o, true, nil
}
