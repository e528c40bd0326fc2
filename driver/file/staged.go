//go:build unix

package file

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/multipart"
)

const (
	stagedPrefix = "put-" // a staged file's name: put-RANDOM
	keySuffix    = ".key" // beside it, put-RANDOM.key: its key and writer
	stageLock    = "tmp.lock"
	// maxSwept bounds how many names of the staging directory one sweep
	// looks at.
	maxSwept = 1000
)

// staged is a write in progress: a temporary file under an exclusive
// flock(2) until it is committed or removed, so an unlocked one is a dead
// writer's.
type staged struct {
	f    *os.File
	name string
	id   ident // set once the file is synced
}

// newStaged creates a staged file for key and locks it. The file is
// created and locked under a shared lock on the staging directory's lock
// file, which a sweep takes exclusively: a sweep therefore never sees a
// staged file that is created and not yet locked.
func (b *Bucket) newStaged(ctx context.Context, key string) (*staged, error) {
	dir := filepath.Join(b.root, metaDir, "tmp")
	unlock, err := flockPath(ctx, filepath.Join(b.root, metaDir, stageLock), "", syscall.LOCK_SH)
	if err != nil {
		return nil, err
	}
	defer unlock()
	f, err := os.CreateTemp(dir, stagedPrefix+"*")
	if err != nil {
		return nil, err
	}
	s := &staged{f: f, name: f.Name()}
	// A ListPending may hold a shared lock on it for a moment.
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
	// An object is as readable as its bucket directory, not CreateTemp's
	// 0600, so that whoever may list the directory may read the lease.
	if err == nil {
		err = f.Chmod(b.mode)
	}
	if err == nil {
		err = os.WriteFile(s.name+keySuffix, fmt.Appendf(nil, "%s\npid %d\n", strconv.Quote(key), os.Getpid()), 0o644&b.mode|0o600)
	}
	if err != nil {
		s.discard()
		return nil, err
	}
	return s, nil
}

// done ends a staged file that was committed (renamed over its object):
// its note goes, and its lock with the descriptor.
func (s *staged) done() {
	os.Remove(s.name + keySuffix)
	s.f.Close()
}

// discard removes a staged file that will not be committed, and its note,
// and then releases its lock. It returns the error of removing the file,
// nil if it was removed or was not there.
func (s *staged) discard() error {
	err := os.Remove(s.name)
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	os.Remove(s.name + keySuffix)
	s.f.Close()
	return err
}

// sweep removes the unlocked staged files of writers that are gone, and
// orphaned notes, under the staging lock taken exclusively so that no
// staged file is being created meanwhile (if one is, it leaves the sweep to
// the next write). It looks at maxSwept names at most.
func (b *Bucket) sweep() {
	lf, err := os.OpenFile(filepath.Join(b.root, metaDir, stageLock), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return
	}
	defer lf.Close()
	if syscall.Flock(int(lf.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		return
	}
	dir := filepath.Join(b.root, metaDir, "tmp")
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	names, _ := d.Readdirnames(maxSwept)
	d.Close()
	for _, name := range names {
		if !strings.HasPrefix(name, stagedPrefix) {
			continue
		}
		p := filepath.Join(dir, name)
		if data, ok := strings.CutSuffix(p, keySuffix); ok {
			if _, err := os.Lstat(data); errors.Is(err, fs.ErrNotExist) {
				os.Remove(p) // a note whose writer committed or removed its file, and died
			}
			continue
		}
		if live, err := locked(p); err == nil && !live {
			os.Remove(p)
			os.Remove(p + keySuffix)
		}
	}
}

// locked reports whether the writer of the staged file p holds its lock.
// It tries a shared lock, so that two lookers do not mistake each other
// for a writer; a file found unlocked stays so, as its writer is gone.
func locked(p string) (bool, error) {
	f, err := os.Open(p)
	if err != nil {
		return false, err
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return true, nil
	}
	return false, err
}

// ListPending yields the staged files whose key starts with prefix, in
// name order, each Upload naming its writer and whether it still runs
// (docs/drivers.md, "Staged writes"). A file without a note has an empty
// Key. It removes nothing.
func (b *Bucket) ListPending(ctx context.Context, prefix string) iter.Seq2[multipart.Pending, error] {
	return driver.Listing(ctx, Scheme, prefix, func(op *driver.Op, yield func(multipart.Pending, error) bool) {
		if kind := b.rootMissing(); kind != nil {
			yield(multipart.Pending{}, op.Fail(kind, nil))
			return
		}
		dir := filepath.Join(b.root, metaDir, "tmp")
		ents, err := os.ReadDir(dir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			yield(multipart.Pending{}, op.Fail(osKind(err), err))
			return
		}
		slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
		for _, e := range ents {
			name := e.Name()
			if !strings.HasPrefix(name, stagedPrefix) || strings.HasSuffix(name, keySuffix) || !e.Type().IsRegular() {
				continue
			}
			if err := ctx.Err(); err != nil {
				yield(multipart.Pending{}, op.Fail(nil, err))
				return
			}
			p := filepath.Join(dir, name)
			u := multipart.Pending{Upload: filepath.Join(metaDir, "tmp", name)}
			if fi, err := e.Info(); err == nil {
				u.Initiated = fi.ModTime()
			}
			pid := ""
			if note, err := os.ReadFile(p + keySuffix); err == nil {
				lines := strings.Split(string(note), "\n")
				if k, err := strconv.Unquote(lines[0]); err == nil {
					u.Key = k
				}
				if len(lines) > 1 {
					pid = strings.TrimPrefix(lines[1], "pid ")
				}
				if fi, err := os.Stat(p + keySuffix); err == nil {
					u.Initiated = fi.ModTime()
				}
			}
			u.Abort = b.abortFunc(u.Key, p)
			if !strings.HasPrefix(u.Key, prefix) || u.Key == "" && prefix != "" {
				continue
			}
			live, err := locked(p)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				continue // committed or removed meanwhile
			case err != nil:
				u.Upload += fmt.Sprintf(" (its lock could not be read: %v)", err)
			case live && pid != "":
				u.Upload += " (being written by process " + pid + ")"
			case live:
				u.Upload += " (being written)"
			case pid != "":
				u.Upload += " (left by process " + pid + ", which is gone; the next write removes it)"
			default:
				u.Upload += " (left by a writer that is gone; the next write removes it)"
			}
			if !yield(u, nil) {
				return
			}
		}
	})
}
