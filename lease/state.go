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

// A restart adopts its own lease through a state directory
// (Options.StateDir), with a proof that a twin cannot forge.
//
// The instance id alone proves nothing: a restart of this instance and a
// live twin configured with the same id look alike in the lease object. A
// contender with a state directory holds an exclusive lock on a file there
// (flock(2)) for as long as it lives, and appends to that file every record
// it is about to write, before it sends it. The kernel drops the lock when
// the process dies, even by SIGKILL or the OOM killer; a stopped process
// keeps it. So a contender that takes the lock knows that every process that
// wrote the records in the file is gone, and if the stored lease object is
// exactly one of them (records are unique: see own.go), nobody alive holds
// the lease: it adopts it at once instead of waiting out a TTL behind
// itself. A twin on another machine or with another state directory never
// wrote those records, and a contender whose predecessor is only stopped
// cannot take the lock: neither adopts.
//
// What it does not cover: a state directory on a network file system, where
// flock may not exclude another machine's process, and two hosts sharing
// one directory; a predecessor's request still in the network when it died
// lands after the adoption like any late request (conditional writes refuse
// it once the adopted lease has moved on).

// journalMax bounds how many records a journal keeps; only the latest few
// can be the stored lease object.
const journalMax = 64

// journal is a contender's state file: the records written under one lease
// key by this contender and, once it holds the lock, by its dead
// predecessors.
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

// openJournal returns the journal for key under dir; it takes the lock
// later (lock), at each acquire, until it has it.
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

// lock takes the lock if it is not held yet, and reads what the
// predecessors recorded. It reports whether the lock is held.
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

// parseJournal reads one record per line, skipping what does not parse
// (a line cut short by a crash): a record missing from the journal can only
// make a restart wait, never adopt.
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

// record appends r before it is sent. Without the lock it records nothing.
// A failed write is logged; it can only make a restart wait.
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

// predecessors reports whether rec is a record that a dead predecessor
// wrote: the lock is held, and the journal held rec when it was taken.
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

// close drops the lock.
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

// The suspect watch outlives the process too: a job that runs once a
// minute, each run a new process (with a new instance id, as hold's default
// is), would otherwise never see a suspect record unchanged for a TTL and
// would be refused forever. The watch is an observation of the lease
// object, not a claim of any instance, so it is kept per lease key (not per
// id) in the state directory, on the wall clock (the monotonic clock does
// not survive a process), and written by rename so a reader never sees
// half of it.

// watchState is the watch as the state directory keeps it.
type watchState struct {
	Version string    `json:"version"`
	Since   time.Time `json:"since"` // when first seen, by this machine's wall clock
}

// loadWatch takes up a watch that an earlier process of this instance
// kept, if the contender has none of its own.
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

// saveWatch keeps the contender's watch for the next process, or removes
// it once there is none.
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

// writeFileAtomic writes data to path by a rename from a temporary file
// beside it.
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
