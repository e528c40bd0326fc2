//go:build unix

package file

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/multipart"
)

// satisfied reports whether cond holds for the stored version cur ("" when
// the key is missing).
func satisfied(cur driver.Version, cond driver.Condition) bool {
	if cond == driver.IfAbsent() {
		return cur == ""
	}
	if v, ok := cond.Match(); ok {
		return cur != "" && cur == v
	}
	return true
}

// beginWrite starts a Put or PutStream: it maps key to its file, refuses
// a bucket whose directory is gone (a write never recreates it), and
// sweeps dead writers' staged files.
func (b *Bucket) beginWrite(ctx context.Context, key string, opts driver.PutOptions) (*driver.Op, string, error) {
	op, err := driver.BeginPut(ctx, b.caps, Scheme, key, opts)
	if err != nil {
		return nil, "", err
	}
	p, err := b.path(op, key)
	if err != nil {
		return nil, "", err
	}
	if kind := b.rootMissing(); kind != nil {
		return nil, "", op.Fail(kind, nil)
	}
	b.sweep()
	return op, p, nil
}

// Put writes data, with opts.Metadata, to key atomically if opts.If holds,
// and returns the new version and the service's time, which it returns
// with a refused condition too.
func (b *Bucket) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	op, p, err := b.beginWrite(ctx, key, opts)
	if err != nil {
		return driver.Attrs{}, err
	}
	// Staged before the key's lock is taken, so that the lock is held
	// only for the commit (see lock.go).
	v := newVersion()
	s, err := b.stage(ctx, key, op.Metadata, func(f *os.File) error {
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
	var kind error
	if err == nil {
		err, kind = b.commitStaged(ctx, key, opts.If, s, p, v)
	}
	if err != nil {
		if s != nil {
			s.discard()
		}
		if kind == nil {
			kind = osKind(err)
		}
		if errors.Is(kind, driver.ErrPrecondition) {
			return driver.Attrs{Time: b.serviceTime(time.Time{})}, op.Fail(kind, nil)
		}
		return driver.Attrs{}, op.Fail(kind, err)
	}
	s.done()
	return driver.Attrs{Version: v, Time: b.serviceTime(time.Time{})}, nil
}

// writeChunk is how much Put and PutStream write between two looks at the
// context.
const writeChunk = 1 << 20

func newVersion() driver.Version {
	var rnd [16]byte
	rand.Read(rnd[:])
	return driver.Version(hex.EncodeToString(rnd[:]))
}

// PutStream stages the body read from r as Put does, calling opts.Allow
// before each part and before the commit. On failure the staged file is
// removed, and the error's *multipart.UploadError says whether it was.
func (b *Bucket) PutStream(ctx context.Context, key string, r io.Reader, po driver.PutOptions, opts *driver.StreamOptions) (driver.Attrs, error) {
	op, p, err := b.beginWrite(ctx, key, po)
	if err != nil {
		return driver.Attrs{}, err
	}
	v := newVersion()
	var refusal error // the kind of a failure that is not the file system's
	s, err := b.stage(ctx, key, op.Metadata, func(f *os.File) error {
		buf := make([]byte, opts.Size())
		for no := 1; ; no++ {
			if err := opts.Allow(); err != nil {
				return fmt.Errorf("MayStart refused part %d: %w", no, err)
			}
			n, rerr := multipart.ReadPart(ctx, r, buf)
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
		err, refusal = b.commitStaged(ctx, key, po.If, s, p, v)
	}
	if err == nil {
		s.done()
		return driver.Attrs{Version: v}, nil
	}
	ue := &multipart.UploadError{Err: err}
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
	return driver.Attrs{}, op.Fail(refusal, ue)
}

// commitStaged commits the staged file s as version v of key's object at p
// under the key's lock if cond holds; a refusal returns its kind as well.
func (b *Bucket) commitStaged(ctx context.Context, key string, cond driver.Condition, s *staged, p string, v driver.Version) (err, kind error) {
	unlock, err := b.lock(ctx, key)
	if err != nil {
		return err, nil
	}
	defer unlock()
	cur, keep, err := b.current(key, p)
	if err != nil {
		return err, nil
	}
	if !satisfied(cur, cond) {
		return errors.New("the condition did not hold at the commit"), driver.ErrPrecondition
	}
	if err := b.layoutConflict(key, p); err != nil {
		return err, driver.ErrInvalidKey
	}
	if err := b.commit(ctx, key, s, p, v, keep); err != nil {
		if cerr := b.layoutConflict(key, p); cerr != nil {
			return cerr, driver.ErrInvalidKey
		}
		return err, nil
	}
	return nil, nil
}

// commit makes the staged file s the object at p, with version v, under
// key's lock. The record is rewritten first, naming both the current file
// (keep) and s, then s is renamed over p, so a crash on either side of the
// rename leaves a file the record names. Only the rename changes the
// object.
func (b *Bucket) commit(ctx context.Context, key string, s *staged, p string, v driver.Version, keep *entry) error {
	entries := make([]entry, 0, 2)
	if keep != nil {
		entries = append(entries, *keep)
	}
	entries = append(entries, entry{v: v, id: s.id})
	if err := b.writeRecord(key, entries); err != nil {
		return err
	}
	if err := b.install(ctx, s.name, p); err != nil {
		return err
	}
	// Stamp the ctime dateOf reads after the rename, on systems whose
	// rename does not; the object is committed, so a failure fails nothing.
	_ = s.f.Chmod(b.mode)
	return nil
}

// stage writes body and md to a new staged file, syncs it and notes its
// identity. On an error the staged file, if any, is returned to discard.
func (b *Bucket) stage(ctx context.Context, key string, md driver.Metadata, body func(f *os.File) error) (*staged, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s, err := b.newStaged(ctx, key)
	if err != nil {
		return nil, err
	}
	err = body(s.f)
	if err == nil && b.caps.Metadata && len(md) > 0 {
		// On the staged file, before the rename that commits it.
		err = setMetadata(s.f, md)
	}
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

// install renames tmp over p under the key's lock, unless ctx has ended,
// and syncs p's directory so the rename survives a crash.
func (b *Bucket) install(ctx context.Context, tmp, p string) error {
	dir := filepath.Dir(p)
	var err error
	for attempt := 0; ; attempt++ {
		// A Delete pruning emptied directories may remove dir during or
		// after MkdirAll (ErrNotExist, or ErrExist when another writer's
		// Mkdir won first): try again.
		err = os.MkdirAll(dir, 0o755)
		if err == nil {
			if err = ctx.Err(); err != nil {
				break
			}
			err = os.Rename(tmp, p)
		}
		if (errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrExist)) && attempt < 10 {
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
