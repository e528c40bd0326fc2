package lease

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// A restart adopts its own lease through Options.StateDir. The contender
// holds flock(2) on a file there for its life and appends every record
// before sending it. The kernel drops the lock when the process dies (even
// SIGKILL), a stopped process keeps it; so whoever takes the lock knows the
// writers of the file's records are gone, and if the lease object is exactly
// one of them (records are unique: own.go) it adopts at once. A twin never
// wrote those records. Not covered: a state directory on a network file
// system or shared by two hosts; a dead predecessor's request still in the
// network lands like any late request (If-Match refuses it once the lease
// moved on).

// journalMax bounds the journal; only the latest records can be stored.
const journalMax = 64

// journal is a contender's state file: the records it and, once locked,
// its dead predecessors wrote under one key.
type journal struct {
	dir, path string
	key       string // the lease key, which names the watch file
	logger    *slog.Logger

	mu     sync.Mutex
	f      *os.File       // open and locked, or nil
	recs   []admin.Record // what the file holds, oldest first
	theirs []admin.Record // the predecessors' records, read when the lock was taken
	err    error          // why the lock is not held, for the log
}

// openJournal returns the journal for key under dir; lock takes the lock.
func openJournal(dir, id, key string, logger *slog.Logger) (*journal, error) {
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("lease: StateDir %q must be an absolute path", dir)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("lease: StateDir: %w", err)
	}
	sum := sha256.Sum256([]byte(id + "\x00" + key))
	return &journal{dir: dir, key: key, path: filepath.Join(dir, "lease-"+hex.EncodeToString(sum[:8])+".state"), logger: logger}, nil
}

// lock takes the lock if not held yet and reads the predecessors' records;
// it reports whether the lock is held.
func (j *journal) lock() bool {
	if j == nil {
		return false
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f != nil {
		return true
	}
	f, err := os.OpenFile(j.path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		j.err = err
		return false
	}
	if err := lockFile(f); err != nil {
		f.Close()
		j.err = err // held by a live (perhaps stopped) process
		return false
	}
	data, err := os.ReadFile(j.path)
	if err != nil {
		f.Close()
		j.err = err
		return false
	}
	j.f, j.err = f, nil
	j.theirs = parseJournal(data)
	j.recs = append([]admin.Record(nil), j.theirs...)
	return true
}

// parseJournal reads one record per line, skipping a torn line: a missing
// record only makes a restart wait.
func parseJournal(data []byte) []admin.Record {
	var recs []admin.Record
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if r, err := admin.DecodeRecord(sc.Bytes()); err == nil {
			recs = append(recs, r)
		}
	}
	return recs
}

// record appends r before it is sent, if the lock is held. A failed write
// only makes a restart wait.
func (j *journal) record(r admin.Record) {
	if j == nil {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return
	}
	if err := j.appendLocked(r); err != nil {
		j.logger.Warn("lease state: could not note a record before sending it; a restart will wait for it to go stale instead of adopting it",
			slog.String("file", j.path), slog.String("error", err.Error()))
	}
}

func (j *journal) appendLocked(r admin.Record) error {
	j.recs = append(j.recs, r)
	if len(j.recs) > journalMax {
		j.recs = append(j.recs[:0], j.recs[len(j.recs)-journalMax/2:]...)
		var buf bytes.Buffer
		for _, x := range j.recs {
			buf.Write(x.Encode())
			buf.WriteByte('\n')
		}
		if err := j.f.Truncate(0); err != nil {
			return err
		}
		_, err := j.f.WriteAt(buf.Bytes(), 0)
		return err
	}
	st, err := j.f.Stat()
	if err != nil {
		return err
	}
	_, err = j.f.WriteAt(append(r.Encode(), '\n'), st.Size())
	return err
}

// predecessors reports whether a dead predecessor wrote rec.
func (j *journal) predecessors(rec admin.Record) bool {
	if j == nil {
		return false
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return false
	}
	for _, x := range j.theirs {
		if x.Same(rec) {
			return true
		}
	}
	return false
}

func (j *journal) close() error {
	if j == nil {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return nil
	}
	err := j.f.Close()
	j.f = nil
	return err
}

// The suspect watch is kept too, per lease key, on the wall clock, written
// by rename: a job run once a minute as a new process would otherwise never
// see a suspect record unchanged for a TTL.

// watchState is the watch as the state directory keeps it.
type watchState struct {
	Version string    `json:"version"`
	Since   time.Time `json:"since"` // when first seen, by this machine's wall clock
}

// loadWatch takes up an earlier process's watch if the contender has none.
func (c *Contender) loadWatch() {
	j := c.journal
	if j == nil || c.watch.seen {
		return
	}
	data, err := os.ReadFile(j.watchPath())
	if err != nil {
		return
	}
	var w watchState
	if json.Unmarshal(data, &w) != nil || w.Version == "" {
		return
	}
	ago := c.s.clock.Wall().Sub(w.Since)
	if ago < 0 {
		return // the wall clock went back: start watching afresh
	}
	c.watch = suspectWatch{version: driver.Version(w.Version), since: c.s.clock.Mono() - ago, seen: true}
}

// saveWatch keeps the watch for the next process, or removes it.
func (c *Contender) saveWatch() {
	j := c.journal
	if j == nil {
		return
	}
	if !c.watch.seen {
		os.Remove(j.watchPath())
		return
	}
	since := c.s.clock.Wall().Add(c.watch.since - c.s.clock.Mono())
	data, _ := json.Marshal(watchState{Version: string(c.watch.version), Since: since})
	if err := writeFileAtomic(j.watchPath(), data); err != nil {
		c.s.logger.Warn("lease state: could not keep the suspect watch for the next process", slog.String("error", err.Error()))
	}
}

// watchPath is the file of the suspect watch of the journal's lease key.
func (j *journal) watchPath() string {
	sum := sha256.Sum256([]byte(j.key))
	return filepath.Join(j.dir, "watch-"+hex.EncodeToString(sum[:8])+".json")
}

// writeFileAtomic writes path by renaming a temporary file beside it.
func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}
