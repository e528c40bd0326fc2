//go:build linux

package chaos

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mushroomdb/bucketlease/lease/admin"
)

// Entry is one line of a worker's log: a JSON object per line, appended
// with one write(2) each so that a SIGKILL loses at most the line being
// written. T is the system wall clock (shared by every process on the
// machine, and never the worker's skewed test clock), in nanoseconds since
// the Unix epoch.
type Entry struct {
	T      int64  `json:"t"`
	Proc   string `json:"proc"`             // slot and incarnation, "w3.2"; unique per process
	ID     string `json:"id"`               // the instance id
	Ev     string `json:"ev"`               // what happened; see the Ev* constants
	Prefix string `json:"prefix,omitempty"` // the lease's label: "p0", "p1", ... (Label)
	Epoch  int    `json:"epoch,omitempty"`  // the process's lease epoch on Prefix (1, 2, ...)
	Key    string `json:"key,omitempty"`
	Cond   string `json:"cond,omitempty"`
	Ver    string `json:"ver,omitempty"`
	OK     bool   `json:"ok,omitempty"`
	// Refused: the fenced bucket refused to start the write; nothing was sent.
	Refused bool   `json:"refused,omitempty"`
	Err     string `json:"err,omitempty"`
	Detail  string `json:"detail,omitempty"`
	// Holder, HolderVer, HolderRenewed, HolderTTL and State describe a
	// record read back: the holder that refused an acquire, or the
	// record found after a loss.
	Holder        string `json:"holder,omitempty"`
	HolderVer     string `json:"holder_ver,omitempty"`
	HolderRenewed int64  `json:"holder_renewed,omitempty"`
	HolderTTL     int64  `json:"holder_ttl,omitempty"`
	State         string `json:"state,omitempty"`
	Kind          string `json:"kind,omitempty"` // acquired or took-over, for EvAcquireOK
	Prev          string `json:"prev,omitempty"` // the version LATEST was read at, for a LATEST write
	// Seq, Op, Match, Body and Status describe a request on the LEASE
	// object (EvLeaseCall, EvLeaseReturn): its number in the process, get,
	// put or delete, its condition (Ver the version If-Match names, or on
	// the return the version answered), the digest of the body written or
	// read, and the answer's class (register.OK, ...).
	Seq    int64  `json:"seq,omitempty"`
	Op     string `json:"op,omitempty"`
	Match  string `json:"match,omitempty"`
	Body   string `json:"body,omitempty"`
	Status string `json:"status,omitempty"`
	// Clock: the error (Err) wraps lease.ErrClock, for EvAcquireFail and
	// EvLease.
	Clock bool `json:"clock,omitempty"`
	// ServiceRes is the resolution of the service's clock by which a
	// refusing record was also judged (admin.Status.Service), for an
	// EvAcquireFail refused as held; 0 when the driver reported none.
	ServiceRes time.Duration `json:"service_res,omitempty"`
	// LeaseEpoch is the lease's own epoch (lease.Lease.Epoch), for
	// EvAcquireOK; for hold's command, BUCKETLEASE_EPOCH.
	LeaseEpoch uint64 `json:"lease_epoch,omitempty"`
	// Eras are the holders a record written to the LEASE object tells
	// of (its own era once it says when it began, then Record.Before),
	// for an EvLeaseCall that puts a record: what a reader of that
	// record judges late writes by.
	Eras []admin.Era `json:"eras,omitempty"`
}

// The events a worker logs.
const (
	EvStart        = "start"         // Detail: the switches it runs with
	EvAcquireStart = "acquire-start" // before Contender.Acquire
	EvAcquireOK    = "acquire-ok"    // Acquire returned a lease: Epoch, Ver, Kind, Detail (empty for a free key)
	EvAcquireFail  = "acquire-fail"  // Acquire failed: Err, and Holder... for a HeldError
	EvLease        = "lease"         // an Options.OnEvent event: Detail is its kind
	EvLostRead     = "lost-read"     // the LEASE object read right after ErrLost
	EvWriteStart   = "write-start"   // before a data write is handed to the bucket
	EvWriteEnd     = "write-end"     // its outcome: OK and Ver, or Err (Refused if never sent)
	// EvStreamReq: a request of a streamed write's upload (a part, or
	// the commit, the last) is about to be asked for by the driver, before
	// the fence is; Seq numbers them. Logged again with Refused and Err if
	// the fence (or the control's gate) refused it.
	EvStreamReq = "stream-req"
	// EvScratchStart, EvScratchEnd: the lease streams to a scratch key
	// (its stream probe), and the outcome.
	EvScratchStart = "scratch-start"
	EvScratchEnd   = "scratch-end"
	EvReleaseStart = "release-start" // SIGTERM: before Release
	EvReleaseEnd   = "release-end"
	EvExit         = "exit"
)

// Time returns e.T as a time.
func (e Entry) Time() time.Time { return time.Unix(0, e.T) }

// String renders e on one line for an interleaving.
func (e Entry) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %-6s %-13s", e.Time().UTC().Format("15:04:05.000"), e.Proc, e.Ev)
	add := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, " %s=%s", k, v)
		}
	}
	add("id", e.ID)
	add("prefix", e.Prefix)
	if e.Epoch != 0 {
		add("epoch", fmt.Sprint(e.Epoch))
	}
	add("kind", e.Kind)
	add("key", e.Key)
	add("cond", e.Cond)
	add("ver", e.Ver)
	if e.Ev == EvWriteEnd {
		add("ok", fmt.Sprint(e.OK))
	}
	if e.Refused {
		add("refused", "true")
	}
	add("holder", e.Holder)
	add("holder_ver", e.HolderVer)
	add("state", e.State)
	add("detail", e.Detail)
	add("err", e.Err)
	return b.String()
}

// Logger appends Entries to a file. It is safe for concurrent use.
type Logger struct {
	mu   sync.Mutex
	f    *os.File
	proc string
	id   string
}

// OpenLogger opens (creating or appending to) the log at path for the
// process proc with instance id id.
func OpenLogger(path, proc, id string) (*Logger, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &Logger{f: f, proc: proc, id: id}, nil
}

// Log stamps e with the time (unless e.T is set), process and id, and
// appends it.
func (l *Logger) Log(e Entry) {
	if e.T == 0 {
		e.T = time.Now().UnixNano()
	}
	e.Proc, e.ID = l.proc, l.id
	line, err := json.Marshal(e)
	if err != nil {
		return
	}
	line = append(line, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = l.f.Write(line)
}

// Close closes the file.
func (l *Logger) Close() error { return l.f.Close() }

// ReadLogs reads every log file named and returns the entries sorted by
// time (stably, so one process's lines keep their order). A torn last line
// (a process killed mid-write) is skipped.
func ReadLogs(paths []string) ([]Entry, error) {
	var all []Entry
	for _, p := range paths {
		f, err := os.Open(p)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var e Entry
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				all = append(all, e)
			}
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", p, err)
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].T < all[j].T })
	return all, nil
}
