//go:build unix

package file

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/mushroomdb/bucketlease/driver"
)

// recordMagic is the first line of a key's version record.
const recordMagic = "bucketlease-versions v1"

// ident tells one data file from another: device, inode, size and mtime.
// A rename keeps all four; an edit or a copy changes one.
type ident struct {
	dev, ino uint64
	size     int64
	mtime    int64 // nanoseconds since the epoch
}

func identOf(st fs.FileInfo) ident {
	id := ident{size: st.Size(), mtime: st.ModTime().UnixNano()}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		id.dev, id.ino = uint64(sys.Dev), uint64(sys.Ino)
	}
	return id
}

// entry is one line of a record: the version of the data file whose
// identity is id.
type entry struct {
	v  driver.Version
	id ident
}

// recordPath is where key's version record lives.
func (b *Bucket) recordPath(key string) string { return recordIn(b.root, key) }

// recordIn is where the bucket kept in root keeps key's version record.
func recordIn(root, key string) string {
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(root, metaDir, "versions", hex.EncodeToString(sum[:16]))
}

// records yields the version records that may name the file of key: this
// bucket's, then those of buckets in the directories above it, nearest
// first, so that an object reads at one version whichever URL reads it.
// An entry names a file by its identity, so no other bucket's record can
// name a file it did not write.
func (b *Bucket) records(key string) iter.Seq[[]entry] {
	return func(yield func([]entry) bool) {
		if !yield(readRecord(b.recordPath(key), key)) {
			return
		}
		p := filepath.Join(b.root, filepath.FromSlash(key))
		for d := filepath.Dir(p); ; d = filepath.Dir(d) {
			if d != b.root {
				if rel, err := filepath.Rel(d, p); err == nil {
					k := filepath.ToSlash(rel)
					if es := readRecord(recordIn(d, k), k); es != nil && !yield(es) {
						return
					}
				}
			}
			if filepath.Dir(d) == d {
				return
			}
		}
	}
}

// readRecord returns the entries of key's record at path; a bad record,
// or another key's, has none, so the file reads at a version derived from
// its identity, which no earlier condition names.
func readRecord(path, key string) []entry {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) < 2 || lines[0] != recordMagic || lines[1] != "key "+strconv.Quote(key) {
		return nil
	}
	var es []entry
	for _, l := range lines[2:] {
		var e entry
		var v string
		if n, err := fmt.Sscanf(l, "%s %d %d %d %d", &v, &e.id.dev, &e.id.ino, &e.id.size, &e.id.mtime); err != nil || n != 5 || v == "" {
			return nil
		}
		e.v = driver.Version(v)
		es = append(es, e)
	}
	return es
}

// writeRecord replaces key's record with entries, durably: written to a
// file beside it, synced, renamed over it, and the directory synced. The
// caller holds key's lock, so the one file beside it is the caller's.
func (b *Bucket) writeRecord(key string, entries []entry) error {
	p := b.recordPath(key)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "%s\nkey %s\n", recordMagic, strconv.Quote(key))
	for _, e := range entries {
		fmt.Fprintf(&buf, "%s %d %d %d %d\n", e.v, e.id.dev, e.id.ino, e.id.size, e.id.mtime)
	}
	tmp := p + ".new"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, b.mode|0o200)
	if err != nil {
		return err
	}
	_, err = f.Write(buf.Bytes())
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err == nil {
		err = syncDir(filepath.Dir(p))
	}
	if err != nil {
		return fmt.Errorf("writing the version record of %q (%s): %w", key, p, err)
	}
	return nil
}

// legacyMagic began every object written by the driver before it kept
// versions in records: one line "bucketlease-object v1 VERSION", then the
// bytes.
const legacyMagic = "bucketlease-object v1 "

// versionOf returns the version of the data file f of key, the bytes
// before its body (a legacy header's), and the record entry naming it, if
// any. A file no record names gets a version derived from its identity.
func (b *Bucket) versionOf(key string, f *os.File, st fs.FileInfo) (v driver.Version, skip int64, named *entry, err error) {
	id := identOf(st)
	for es := range b.records(key) {
		for i := range es {
			if es[i].id == id {
				return es[i].v, 0, &es[i], nil
			}
		}
	}
	head := make([]byte, len(legacyMagic)+32+1)
	n, err := f.ReadAt(head, 0)
	if err != nil && err != io.EOF {
		return "", 0, nil, err
	}
	if n == len(head) && bytes.HasPrefix(head, []byte(legacyMagic)) && head[n-1] == '\n' && isHex(head[len(legacyMagic):n-1]) {
		return driver.Version(head[len(legacyMagic) : n-1]), int64(n), nil, nil
	}
	sum := sha256.Sum256(fmt.Appendf(nil, "%d/%d/%d", id.ino, id.size, id.mtime))
	return driver.Version("h" + hex.EncodeToString(sum[:])[:31]), 0, nil, nil
}

func isHex(b []byte) bool {
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
