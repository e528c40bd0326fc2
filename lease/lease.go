package lease

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// fencePoll bounds the fence timer's sleep: Go's timers do not follow the
// wall clock across a suspension, the wall-clock check does.
const fencePoll = time.Second

// Lease is a held lease on {prefix}/LEASE. Keep it renewed (Keep), write
// only while MayWrite reports true (or through Bucket, which checks for
// you), and Release it on shutdown. Its methods are safe for concurrent use.
type Lease struct {
	b         driver.Bucket
	prefix    string // without trailing slashes
	key       string
	s         *settings
	caps      driver.Capabilities
	epoch     uint64      // the acquire's, which every renewal keeps
	stamp     admin.Stamp // what Bucket writes on every object, made once
	began     time.Time   // Record.Began, which renewals write; zero if unknown
	pace      *pacer      // the acquire's, so a renewal right after it keeps spacing
	fence     context.Context
	stopFence context.CancelCauseFunc // ends fence with a cause
	turn      chan struct{}           // one renewal or release at a time, awaited under a context

	stamps *stamps     // the contender's: renewed_at increases across all its writes
	sent   sentRecords // the records this lease sent whose write may have landed
	past   sentRecords // the latest records this lease sent, landed or not, to know a stale read

	mu           sync.Mutex
	rec          admin.Record
	version      driver.Version
	sentMono     time.Duration // when the last successful write was sent
	sentWall     time.Time
	done         error  // ErrFenced, ErrLost or ErrReleased once the lease is over
	why          string // what ended it, in words
	stopTimer    func() bool
	children     map[*byte]context.CancelCauseFunc // the live contexts from Fence
	writes       int                               // writes through Bucket that have not returned
	idle         chan struct{}                     // closed when writes drops to 0 after the lease ended
	inTurn       bool                              // a renewal or release holds the turn
	queued       []Event                           // events raised during the turn, reported after it
	svc          *admin.ServiceClock               // at the latest acquire or renewal; nil if not reported
	streamProven bool                              // proveStreamCommit passed
}

func newLease(c *Contender, b driver.Bucket, st stamp, v driver.Version) *Lease {
	l := &Lease{b: b, prefix: strings.TrimRight(c.prefix, "/"), key: c.key, s: c.s, caps: b.Capabilities(), epoch: st.rec.Epoch,
		stamp: admin.Stamp{Epoch: st.rec.Epoch, Instance: admin.StampedInstance(c.s.id)}, rec: st.rec, version: v,
		sentMono: st.mono, sentWall: st.wall, turn: make(chan struct{}, 1), stamps: c.stamps, pace: newPacer(c.s.clock, b.Capabilities())}
	l.sent.journal = c.journal
	l.sent.add(st.rec)
	l.past.add(st.rec)
	l.fence, l.stopFence = context.WithCancelCause(context.Background())
	l.mu.Lock()
	l.armLocked()
	l.mu.Unlock()
	return l
}

// Key returns the key of the lease object.
func (l *Lease) Key() string { return l.key }

// InstanceID returns the id this lease is held under.
func (l *Lease) InstanceID() string { return l.s.id }

// Epoch returns the lease's epoch, greater than every earlier holder's and
// kept by renewals; never zero. Hand it to systems outside the bucket to
// tell a late holder's writes from timely ones.
func (l *Lease) Epoch() uint64 { return l.epoch }

// Exclusion reports how strongly this lease keeps a second writer out on
// its service: Conditional, or BestEffort under EnvConditional=off.
func (l *Lease) Exclusion() driver.Exclusion { return l.caps.Exclusion }

func (l *Lease) lastVersion() driver.Version {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.version
}

func (l *Lease) lastRecord() admin.Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rec
}
