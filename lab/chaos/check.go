//go:build linux

package chaos

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mushroomdb/bucketlease/lab/chaos/register"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// The invariants the checker holds a run to.
const (
	// InvExclusion: no write is started under a lease after another
	// process's later lease began. A write is placed in the epoch its
	// writer logged; epoch E is certainly earlier than F when E's acquire
	// returned before F's began, and a write certainly started after F
	// when its start was logged after F's acquire returned. Writes the
	// fenced bucket refused to start do not count; a write in flight while
	// its writer was paused does, since its start was logged before.
	InvExclusion = "exclusion"
	// InvLatest: LATEST never moves back to a stale epoch's manifest, and
	// is never replaced by a write under If-None-Match: *.
	InvLatest = "latest"
	// InvImmutable: no immutable object is written twice, and every object
	// holds what the writer its key names wrote.
	InvImmutable = "immutable"
	// InvIntegrity: LATEST names a sealed manifest of its k, whose chunks
	// and parent exist.
	InvIntegrity = "integrity"
	// InvUnlogged: every object in the bucket was written by a write its
	// writer logged as started and did not log as refused by the fence.
	InvUnlogged = "unlogged"
	// InvLostReply: no worker is told ErrLost while the LEASE object
	// still holds its record.
	InvLostReply = "lost-reply"
	// InvRemoved: a holder's LEASE object never vanishes unless its
	// holder released it: neither under the holder (told the object was
	// removed while nobody else had taken the lease) nor under a
	// contender (a lease acquired on a free key after another's lease,
	// whose holder had not released it).
	InvRemoved = "lease-removed"
	// InvRace: no process's race detector (binaries built with -race)
	// reported a data race.
	InvRace = "race"
	// InvLiveness: after a drill kills the holder, a live contender
	// holds the lease, and no contender is refused by the dead holder's
	// record once that record must be stale to every clock.
	InvLiveness = "liveness"
	// InvLinearizable: the history of each LEASE object, as the workers'
	// leases sent and were answered, is linearizable for a
	// compare-and-swap register (register.Check, with Porcupine). Not
	// checked on a label whose LEASE object a process writes without
	// logging it (bucketlease hold, on p0 when the CLI worker runs).
	InvLinearizable = "linearizable"
	// InvLateCommit: no streamed object is committed by a holder after
	// its successor's first write. The request of each part and of the
	// commit is logged as the driver asks the fence whether it may start
	// it, before the fence answers (EvStreamReq); a committed upload's last
	// such line is its commit's. No commit may have been asked for after
	// the acquire of an epoch of another process that certainly followed
	// the writer's returned, which comes before that epoch's first write.
	InvLateCommit = "late-commit"
	// InvOverwritten: no successor's object is overwritten: an object
	// whose body names its writer's epoch E was not followed by a
	// successful write of the same key under an epoch of another process
	// certainly later than E.
	InvOverwritten = "overwritten"
	// InvSealed: every sealed manifest in the bucket names chunks that
	// exist, are its own, and are whole (a streamed chunk's length is the
	// one its first line gives).
	InvSealed = "sealed-chunks"
	// InvPending: no upload is left staged (an S3 multipart upload
	// neither completed nor aborted, a file driver's temporary file) at
	// the end, except those of a write whose process was killed before it
	// logged its outcome. Checked where the harness can list them.
	InvPending = "pending-upload"
	// InvStamp: every object a worker wrote under a lease (through
	// Lease.Bucket, or as hold's command from BUCKETLEASE_EPOCH) carries
	// its writer's stamp: its lease's epoch and its instance id. Checked
	// where the driver keeps metadata (Result.Stamps).
	InvStamp = "stamp"
	// InvLateWrite: the readers' late check (admin.LateBy, by the eras of
	// every record the run's leases wrote to the LEASE object and of the
	// one left at the end) finds every object that certainly landed after
	// a later epoch began, and flags none that certainly landed before
	// the epoch it is flagged after began. See lateWrites.
	InvLateWrite = "late-write"
	// InvClock: no process whose wall clock is wrong from its start
	// (WorkerConfig.ClockOffset, an hour in a normal run: far outside the
	// envelope, and provable from any answer's date) acquires a lease: the
	// lease refuses it with ErrClock.
	InvClock = "clock"
)

// linearizeTimeout bounds Porcupine's search per LEASE history; a search
// that does not end is reported in the summary, not as a violation.
const linearizeTimeout = 60 * time.Second

// Violation is one broken invariant.
type Violation struct {
	Invariant string
	Label     string
	At        time.Time
	Detail    string
	Procs     []string  // the processes involved
	From, To  time.Time // the interleaving to print
	// Known names the known kind of defect the violation is an instance
	// of (KnownOrphanedCreate), for its report; it is a violation all the
	// same.
	Known string
}

// KnownOrphanedCreate: an upload left pending by a write that returned,
// begun while it ran, without the write saying so: a CreateMultipartUpload
// whose reply was lost or whose request was cancelled in flight, which
// the S3 drivers' sweep after such a creation did not find (docs/chaos.md,
// What it found; TestStreamLeavesNoOrphan). It names the kind of a
// pending-upload violation; since the sweep, TestChaos fails on it as on
// any other.
const KnownOrphanedCreate = "orphaned-create"

// Check is the checker's verdict on a run.
type Check struct {
	Violations []Violation
	Epochs     int // leases acquired
	Transfers  int // leases taken over from another instance
	Writes     int // data writes that succeeded
	WritesSent int // data writes sent (started and not refused by the fence)
	Refused    int // data writes the fenced bucket refused to start
	// PreconditionsIgnored counts acquires that failed closed because the
	// service accepted a probe.
	PreconditionsIgnored int
	// ClockRefused counts acquires that failed with lease.ErrClock, and
	// ClockFenced the lease events (a holder fenced) that carried it;
	// ClockRefusedProcs names the processes refused so, and
	// ClockOffsetProcs those started with a wall clock wrong from the
	// start (WorkerConfig.ClockOffset).
	ClockRefused, ClockFenced           int
	ClockRefusedProcs, ClockOffsetProcs []string
	Takeovers                           []time.Duration // one per drill that moved the lease
	// TakersTimedOut counts drills whose lease moved to a live worker
	// whose acquire then ran out of the worker's own deadline (2 TTL):
	// the dead holder's record did not block it, the worker's bound on
	// its acquire did.
	TakersTimedOut int
	// LeaseOps counts the LEASE requests checked for linearizability;
	// Unlinearized names the labels whose check did not finish in time.
	LeaseOps     int
	Unlinearized []string
	// Streamed counts streamed writes sent (started and not refused by
	// the fence), StreamedOK those committed, StreamAborted those that
	// failed once something was staged (a part or the commit refused by
	// the fence, a request cancelled or cut) and whose driver reported the
	// upload aborted, StreamAbortFailed those whose driver reported the
	// abort failed (left to the service's clean-up).
	Streamed, StreamedOK, StreamAborted, StreamAbortFailed int
	// PendingKilled counts the uploads left staged by killed writers
	// (allowed); PendingReported those left by writes that returned an
	// error saying that what they had staged could not be aborted and is
	// left to the service's clean-up (allowed: the spec asks that the
	// error say so); PendingListed is false where they could not be
	// listed.
	PendingKilled, PendingReported int
	PendingListed                  bool
	// Stamped counts the objects that carry a stamp (admin.StampOf);
	// LateFlagged those the readers' late check flags, LateCertain those
	// the logs prove landed after a later epoch began (lateWrites). Late
	// sums them up for the summary, or says why they were not judged.
	Stamped, LateFlagged, LateCertain int
	Late                              string
}

type epoch struct {
	label, proc, id  string
	n                int
	acqStart, acqEnd int64
	kind, detail     string
	lease            uint64 // the lease's own epoch (Lease.Epoch); 0 if not logged
}

type write struct {
	label, proc, id string
	epoch           int
	key, cond, prev string
	start           int64
	end             *Entry
	streamed        bool
	lastReq         int64 // the last request of its upload asked for (EvStreamReq)
	reqs            int
}

type pk struct{ proc, label string }
type ek struct {
	proc, label string
	n           int
}

// CheckRun judges a run from its logs (Result.Entries) and the listing of
// its bucket (Result.Objects), with the drills the harness carried out.
func CheckRun(res *Result) *Check {
	c := &Check{}
	ttl := res.Config.TTL
	envelope := ttl / 3
	if res.Config.Control == ControlSkewBeyond {
		envelope = ttl
	}
	epochs := map[ek]*epoch{}
	var epochList []*epoch
	var writes []*write
	open := map[pk]*write{}
	lastAcq := map[pk]int64{}
	procsOfID := map[string]map[string]bool{}
	type refusal struct {
		e     Entry
		start int64
	}
	var refusals []refusal
	// failed are the acquires that failed, for a drill's taker that
	// moved the lease and then ran out of its own deadline.
	type failure struct {
		proc, id, label string
		start, end      int64
		deadline        bool // it ran out of the worker's deadline
	}
	var failed []failure
	var lostReads, lostEvents []Entry
	released := map[string]bool{}          // procs that began a release
	releasedAt := map[pk][]int64{}         // when, by process and label
	exited := map[string]bool{}            // procs that logged their exit
	scratch := map[string]map[string]int{} // label+key: proc: streams begun and not ended
	offsetProc := map[string]bool{}        // procs started with a wall clock wrong from the start
	clockRefused := map[string]bool{}      // procs refused with ErrClock
	for i := range res.Entries {
		e := res.Entries[i]
		k := pk{e.Proc, e.Prefix}
		if procsOfID[e.ID] == nil {
			procsOfID[e.ID] = map[string]bool{}
		}
		procsOfID[e.ID][e.Proc] = true
		switch e.Ev {
		case EvStart:
			if strings.Contains(" "+e.Detail, " "+ClockOffsetSwitch) && !offsetProc[e.Proc] {
				offsetProc[e.Proc] = true
				c.ClockOffsetProcs = append(c.ClockOffsetProcs, e.Proc)
			}
		case EvAcquireStart:
			lastAcq[k] = e.T
		case EvAcquireOK:
			ep := &epoch{label: e.Prefix, proc: e.Proc, id: e.ID, n: e.Epoch, acqStart: lastAcq[k], acqEnd: e.T, kind: e.Kind, detail: e.Detail, lease: e.LeaseEpoch}
			epochs[ek{e.Proc, e.Prefix, e.Epoch}] = ep
			epochList = append(epochList, ep)
			c.Epochs++
			if offsetProc[e.Proc] {
				c.add(Violation{Invariant: InvClock, Label: e.Prefix, At: time.Unix(0, e.T), Procs: []string{e.Proc},
					From: time.Unix(0, lastAcq[k]), To: time.Unix(0, e.T),
					Detail: fmt.Sprintf("%s, whose wall clock is wrong from its start, acquired a lease (epoch %d): the lease must refuse it with ErrClock", e.Proc, e.Epoch)})
			}
			if e.Kind == "took-over" {
				c.Transfers++
			}
		case EvAcquireFail:
			if strings.Contains(e.Err, "ignores write preconditions") {
				c.PreconditionsIgnored++
			}
			if e.Clock {
				c.ClockRefused++
				if !clockRefused[e.Proc] {
					clockRefused[e.Proc] = true
					c.ClockRefusedProcs = append(c.ClockRefusedProcs, e.Proc)
				}
			}
			if e.Err == "held" {
				refusals = append(refusals, refusal{e, lastAcq[k]})
			}
			failed = append(failed, failure{e.Proc, e.ID, e.Prefix, lastAcq[k], e.T,
				strings.Contains(e.Err, context.DeadlineExceeded.Error())})
		case EvWriteStart:
			w := &write{label: e.Prefix, proc: e.Proc, id: e.ID, epoch: e.Epoch, key: e.Key, cond: e.Cond, prev: e.Prev, start: e.T,
				streamed: strings.HasPrefix(e.Detail, "streamed")}
			writes = append(writes, w)
			open[k] = w
		case EvStreamReq:
			if w := open[k]; w != nil && w.key == e.Key && !e.Refused {
				w.lastReq = e.T
				w.reqs++
			}
		case EvScratchStart, EvScratchEnd:
			sk := e.Prefix + "\x00" + e.Key
			if scratch[sk] == nil {
				scratch[sk] = map[string]int{}
			}
			if e.Ev == EvScratchStart {
				scratch[sk][e.Proc]++
			} else {
				scratch[sk][e.Proc]--
				switch {
				case strings.Contains(e.Err, "left to the service's clean-up"):
					scratch[sk][reportedLeft]++ // the write said that it may have left an upload
				case strings.Contains(e.Err, "starting the multipart upload"):
					scratch[sk][""]++ // a create that failed: it may have landed unknown to the driver
				}
			}
		case EvExit:
			exited[e.Proc] = true
		case EvWriteEnd:
			if w := open[k]; w != nil && w.key == e.Key {
				w.end = &res.Entries[i]
				delete(open, k)
			}
		case EvLostRead:
			lostReads = append(lostReads, e)
		case EvLease:
			if e.Kind == "lost" {
				lostEvents = append(lostEvents, e)
			}
			if e.Clock {
				c.ClockFenced++
			}
		case EvReleaseStart:
			released[e.Proc] = true
			releasedAt[k] = append(releasedAt[k], e.T)
		}
	}
	shared := func(id string) bool { return len(procsOfID[id]) > 1 && dupID(res, id) }

	// What the bucket holds, by label and key.
	objs := map[string]map[string]Object{}
	for _, o := range res.Objects {
		if objs[o.Label] == nil {
			objs[o.Label] = map[string]Object{}
		}
		objs[o.Label][o.Key] = o
	}
	// A write whose outcome was never logged (its process was killed)
	// counts as sent only if the bucket holds its object.
	sent := func(w *write) bool {
		if w.end != nil {
			return !w.end.Refused
		}
		o, ok := objs[w.label][w.key]
		return ok && Fields(o.Body)["proc"] == w.proc
	}
	for _, w := range writes {
		switch {
		case w.end != nil && w.end.Refused:
			c.Refused++
		case sent(w):
			c.WritesSent++
			if w.end != nil && w.end.OK {
				c.Writes++
			}
			if w.streamed {
				c.Streamed++
				switch {
				case w.end != nil && w.end.OK:
					c.StreamedOK++
				case w.end != nil && strings.Contains(w.end.Err, ") was aborted"):
					c.StreamAborted++
				case w.end != nil && (strings.Contains(w.end.Err, "failed too") || strings.Contains(w.end.Err, "was not aborted")):
					c.StreamAbortFailed++
				}
			}
		}
	}

	// Exclusion: for each epoch E, the earliest-ending epoch F of another
	// process that certainly began after E; no write of E may start after
	// F's acquire returned.
	next := map[*epoch]*epoch{}
	for _, e := range epochList {
		var best *epoch
		for _, f := range epochList {
			if f.label == e.label && f.proc != e.proc && f.acqStart > e.acqEnd && (best == nil || f.acqEnd < best.acqEnd) {
				best = f
			}
		}
		if best != nil {
			next[e] = best
		}
	}
	reported := map[*epoch]bool{}
	for _, w := range writes {
		e := epochs[ek{w.proc, w.label, w.epoch}]
		if e == nil || reported[e] || !sent(w) {
			continue
		}
		if f := next[e]; f != nil && w.start > f.acqEnd {
			reported[e] = true
			c.add(Violation{Invariant: InvExclusion, Label: w.label, At: time.Unix(0, w.start),
				Detail: fmt.Sprintf("%s started a write of %s under its epoch %d (acquired %s) at %s, %v after %s's later epoch %d was acquired (%s)",
					w.proc, w.key, e.n, fmtT(e.acqEnd), fmtT(w.start), time.Duration(w.start-f.acqEnd).Round(time.Millisecond),
					f.proc, f.n, fmtT(f.acqEnd)),
				Procs: []string{w.proc, f.proc}, From: time.Unix(0, e.acqStart), To: time.Unix(0, w.start)})
		}
	}

	// A streamed write committed: its outcome logged as a success, or its
	// object, naming its writer, in the bucket (a commit whose answer was
	// lost, or whose process was killed, may have landed).
	committed := func(w *write) bool {
		if w.end != nil && w.end.OK {
			return true
		}
		o, ok := objs[w.label][w.key]
		return ok && Fields(o.Body)["proc"] == w.proc
	}
	c.lateCommits(writes, epochs, next, sent, committed)

	// LATEST: a chain of If-Match writes.
	byVer := map[string]*write{}
	for _, w := range writes {
		if w.end != nil && w.end.OK && strings.HasSuffix(w.key, "LATEST") {
			byVer[w.label+"\x00"+normVersion(w.end.Ver)] = w
		}
	}
	for _, w := range writes {
		if w.end == nil || !w.end.OK || !strings.HasSuffix(w.key, "LATEST") {
			continue
		}
		if w.cond == "If-None-Match: *" {
			for _, o := range writes {
				if o != w && o.label == w.label && o.key == w.key && o.end != nil && o.end.OK && o.end.T < w.start {
					c.add(Violation{Invariant: InvLatest, Label: w.label, At: time.Unix(0, w.start),
						Detail: fmt.Sprintf("%s created LATEST with If-None-Match: * at %s, after %s's LATEST write had succeeded (%s): it replaced an existing LATEST",
							w.proc, fmtT(w.start), o.proc, fmtT(o.end.T)),
						Procs: []string{w.proc, o.proc}, From: time.Unix(0, o.start), To: time.Unix(0, w.end.T)})
					break
				}
			}
			continue
		}
		p := byVer[w.label+"\x00"+normVersion(w.prev)]
		if p == nil {
			continue
		}
		ew, ep := epochs[ek{w.proc, w.label, w.epoch}], epochs[ek{p.proc, p.label, p.epoch}]
		if ew != nil && ep != nil && ew.proc != ep.proc && ew.acqEnd < ep.acqStart {
			c.add(Violation{Invariant: InvLatest, Label: w.label, At: time.Unix(0, w.end.T),
				Detail: fmt.Sprintf("LATEST moved back: %s (epoch %d, acquired %s) replaced the LATEST of %s's later epoch %d (acquired %s)",
					w.proc, ew.n, fmtT(ew.acqEnd), p.proc, ep.n, fmtT(ep.acqEnd)),
				Procs: []string{w.proc, p.proc}, From: time.Unix(0, ew.acqStart), To: time.Unix(0, w.end.T)})
		}
	}

	// Immutable objects: one successful create per key.
	creates := map[string][]*write{}
	for _, w := range writes {
		if w.cond == "If-None-Match: *" && w.end != nil && w.end.OK && !strings.HasSuffix(w.key, "LATEST") {
			k := w.label + "\x00" + w.key
			creates[k] = append(creates[k], w)
		}
	}
	for _, ws := range creates {
		if len(ws) > 1 {
			c.add(Violation{Invariant: InvImmutable, Label: ws[0].label, At: time.Unix(0, ws[1].start),
				Detail: fmt.Sprintf("%s was created twice with If-None-Match: *, by %s and %s", ws[0].key, ws[0].proc, ws[1].proc),
				Procs:  []string{ws[0].proc, ws[1].proc}, From: time.Unix(0, ws[0].start), To: time.Unix(0, ws[1].end.T)})
		}
	}

	// The listing: every object accounted for by a logged write of the
	// writer its key names, and LATEST's backup intact.
	startedBy := map[string][]*write{}
	for _, w := range writes {
		k := w.label + "\x00" + w.key
		startedBy[k] = append(startedBy[k], w)
	}
	for _, o := range res.Objects {
		if o.Name == "LEASE" || admin.IsScratchKey(o.Name) {
			// The lease's own; a scratch key is left behind by a
			// worker killed or paused in the middle of a probe.
			continue
		}
		f := Fields(o.Body)
		if tag := tagOf(o.Name); tag != "" && !strings.HasPrefix(tag, f["proc"]+".") {
			c.add(Violation{Invariant: InvImmutable, Label: o.Label, At: o.Modified,
				Detail: fmt.Sprintf("%s, named for backup %s, holds what %s wrote: %q", o.Key, tag, f["proc"], o.Body),
				Procs:  []string{f["proc"], strings.Split(tag, ".e")[0]}, From: o.Modified.Add(-2 * ttl), To: o.Modified.Add(ttl)})
		}
		var any, unrefused bool
		for _, w := range startedBy[o.Label+"\x00"+o.Key] {
			if w.proc == f["proc"] {
				any = true
				if w.end == nil || !w.end.Refused {
					unrefused = true
				}
			}
		}
		switch {
		case !any:
			c.add(Violation{Invariant: InvUnlogged, Label: o.Label, At: o.Modified,
				Detail: fmt.Sprintf("%s (%q) was written by no write %s logged", o.Key, o.Body, f["proc"]),
				Procs:  []string{f["proc"]}, From: o.Modified.Add(-ttl), To: o.Modified.Add(ttl)})
		case !unrefused:
			c.add(Violation{Invariant: InvUnlogged, Label: o.Label, At: o.Modified,
				Detail: fmt.Sprintf("%s exists, but every write of it by %s was refused by the fence", o.Key, f["proc"]),
				Procs:  []string{f["proc"]}, From: o.Modified.Add(-ttl), To: o.Modified.Add(ttl)})
		}
	}
	for label, m := range objs {
		for key, o := range m {
			if o.Name != "LATEST" {
				continue
			}
			c.checkIntegrity(label, key, o, m, ttl)
		}
	}
	c.overwritten(res.Objects, epochs, startedBy, ttl)
	c.sealedChunks(res.Objects, objs, ttl)
	c.pending(res, startedBy, scratch, exited, ttl)
	c.lateWrites(res, epochs, startedBy)

	// Lost replies: told ErrLost, yet the LEASE object still held our record.
	for _, e := range lostReads {
		if e.State == "record" && e.Holder == e.ID && e.HolderTTL != 0 && !shared(e.ID) {
			c.add(Violation{Invariant: InvLostReply, Label: e.Prefix, At: e.Time(),
				Detail: fmt.Sprintf("%s was told ErrLost (epoch %d), but the LEASE object read right after still held its own record (version %s)",
					e.Proc, e.Epoch, e.HolderVer),
				Procs: []string{e.Proc}, From: e.Time().Add(-2 * ttl), To: e.Time()})
		}
	}
	// Removed: a holder's object vanished and nobody took the lease since.
	for _, e := range lostEvents {
		if !strings.Contains(e.Detail, "removed") || shared(e.ID) || released[e.Proc] {
			continue
		}
		ep := epochs[ek{e.Proc, e.Prefix, e.Epoch}]
		if ep == nil {
			continue
		}
		other := false
		for _, f := range epochList {
			if f.label == e.Prefix && f.proc != e.Proc && f.acqEnd > ep.acqStart && f.acqStart < e.T {
				other = true
				break
			}
		}
		if !other {
			c.add(Violation{Invariant: InvRemoved, Label: e.Prefix, At: e.Time(),
				Detail: fmt.Sprintf("%s's LEASE object (epoch %d, acquired %s) was removed while nobody else had taken the lease: %s",
					e.Proc, ep.n, fmtT(ep.acqEnd), e.Detail),
				Procs: []string{e.Proc}, From: time.Unix(0, ep.acqStart), To: e.Time()})
		}
	}

	// Vanished: a lease acquired on a free key after another lease on the
	// label, whose holder had not released it.
	for _, f := range epochList {
		if f.kind != "acquired" || f.detail != "" {
			continue
		}
		var e *epoch
		ambiguous := false
		for _, g := range epochList {
			switch {
			case g == f || g.label != f.label:
			case g.acqEnd < f.acqStart:
				if e == nil || g.acqEnd > e.acqEnd {
					e = g
				}
			case g.acqStart < f.acqEnd:
				ambiguous = true // its write may have come just before or after f's
			}
		}
		if e == nil || ambiguous || shared(e.id) {
			continue
		}
		rel := false
		for _, t := range releasedAt[pk{e.proc, e.label}] {
			if t > e.acqEnd && t < f.acqEnd {
				rel = true
			}
		}
		if !rel {
			c.add(Violation{Invariant: InvRemoved, Label: f.label, At: time.Unix(0, f.acqEnd),
				Detail: fmt.Sprintf("%s acquired the lease on a free key (%s), yet the last lease before it, %s's epoch %d (acquired %s), was never released by its holder: its LEASE object vanished",
					f.proc, fmtT(f.acqEnd), e.proc, e.n, fmtT(e.acqEnd)),
				Procs: []string{f.proc, e.proc}, From: time.Unix(0, e.acqStart), To: time.Unix(0, f.acqEnd)})
		}
	}

	for _, r := range res.Races {
		c.add(Violation{Invariant: InvRace, At: res.End, Detail: "the race detector reported, in " + r})
	}

	// Drills.
	for _, d := range res.Drills {
		if d.Skipped != "" {
			continue
		}
		victim := map[string]bool{}
		for _, p := range d.Procs {
			victim[p] = true
		}
		victimID := map[string]bool{}
		for _, id := range d.Victims {
			victimID[id] = true
		}
		// When an epoch certainly held the lease: its acquire's return,
		// or for bucketlease hold's the acquired_at of the LEASE object
		// its command read (hold writes it with the system clock, and its
		// command, started under the lease, may log well after). A
		// worker's acquire that was under way when the harness saw the
		// lease move wrote the record it moved to: it held the lease from
		// the move, however long its acquire took to return after it (its
		// probes and its epoch's settling on a loaded machine).
		moved := d.Moved.UnixNano()
		held := func(f *epoch) int64 {
			if f.kind == "cli" && f.detail == "" {
				return f.acqStart
			}
			if f.kind != "cli" && !d.Moved.IsZero() && f.acqStart <= moved && moved <= f.acqEnd {
				return moved
			}
			return f.acqEnd
		}
		// When an epoch certainly held the lease after the kill: as held
		// says, or, for hold's whose acquire attempt (which acquired_at
		// dates) began before the kill, when its command logged it. A
		// takeover waits for the service's clock too (TTL plus
		// its resolution, 2 s on file), so hold's polling attempt may
		// straddle the kill (file, seed 694360704).
		kill := d.Kill.UnixNano()
		heldAfter := func(f *epoch) int64 {
			if t := held(f); t > kill {
				return t
			}
			if f.kind == "cli" && f.acqEnd > kill {
				return f.acqEnd
			}
			return 0
		}
		var took *epoch
		for _, f := range epochList {
			if f.label == d.Label && !victim[f.proc] && heldAfter(f) > 0 && (took == nil || heldAfter(f) < heldAfter(took)) {
				took = f
			}
		}
		end := d.Kill.Add(4*ttl + 10*time.Second)
		if !d.Moved.IsZero() {
			end = d.Moved
		}
		// The worker that moved the lease may have run out of its own
		// deadline after it wrote the record (its probes and its epoch's
		// settling on a loaded machine): the lease named a live contender
		// from the move, which is what liveness asks.
		timedOut := false
		for _, f := range failed {
			if f.label == d.Label && f.id == d.MovedTo && !victim[f.proc] && f.deadline && f.start <= moved && moved <= f.end {
				timedOut = true
			}
		}
		switch {
		case (took == nil || heldAfter(took) > end.UnixNano()+int64(time.Second)) && timedOut:
			c.TakersTimedOut++
			c.Takeovers = append(c.Takeovers, time.Duration(moved-kill))
		case took == nil || heldAfter(took) > end.UnixNano()+int64(time.Second):
			c.add(Violation{Invariant: InvLiveness, Label: d.Label, At: end,
				Detail: fmt.Sprintf("no live contender held the lease by %s, after its holder %s was killed at %s",
					end.UTC().Format("15:04:05.000"), strings.Join(d.Procs, ","), d.Kill.UTC().Format("15:04:05.000")),
				// The report shows 3 TTLs past the deadline: who took
				// the lease late, or whose acquire failed after the move.
				Procs: d.Procs, From: d.Kill.Add(-ttl), To: end.Add(3 * ttl)})
		default:
			c.Takeovers = append(c.Takeovers, time.Duration(heldAfter(took)-kill))
		}
		for _, r := range refusals {
			// The dead holder's last renewal landed before the kill, so
			// its record is stale by every clock within the envelope once
			// TTL + envelope has passed, and on the service's clock (the
			// lease's rule: Date - Modified >= TTL + resolution, both
			// truncated to the resolution) once serviceAge(TTL, its
			// resolution) has.
			after := max(ttl+envelope, serviceAge(ttl, r.e.ServiceRes))
			stale := d.Kill.Add(after + 100*time.Millisecond).UnixNano()
			if r.e.Prefix == d.Label && r.e.State == "fresh" && victimID[r.e.Holder] && r.start >= stale && r.e.T <= end.UnixNano() &&
				!victim[r.e.Proc] {
				c.add(Violation{Invariant: InvLiveness, Label: d.Label, At: r.e.Time(),
					Detail: fmt.Sprintf("%s's acquire, begun %s, was refused by the record of %s, killed at %s: it counted as fresh %v after the kill (TTL %v, skew bound %v, the service's clock's resolution %v)",
						r.e.Proc, fmtT(r.start), r.e.Holder, d.Kill.UTC().Format("15:04:05.000"),
						time.Duration(r.start-d.Kill.UnixNano()).Round(time.Millisecond), ttl, envelope, r.e.ServiceRes),
					Procs: append([]string{r.e.Proc}, d.Procs...), From: d.Kill.Add(-ttl), To: r.e.Time()})
				break
			}
		}
	}
	c.linearizable(res)
	return c
}

func (c *Check) add(v Violation) { c.Violations = append(c.Violations, v) }

// serviceAge is how long after a record's write, in true time, it is
// certainly stale on the service's clock: the lease requires Date -
// Modified >= TTL + res of the two times truncated to res, which holds
// once true time reaches the modification time plus TTL + res rounded up
// to a multiple of res.
func serviceAge(ttl, res time.Duration) time.Duration {
	if res <= 0 {
		return ttl
	}
	need := ttl + res
	return (need + res - 1) / res * res
}

// lateCommits: a committed streamed write of epoch E whose commit was asked
// for after the acquire of the epoch that certainly followed E returned.
func (c *Check) lateCommits(writes []*write, epochs map[ek]*epoch, next map[*epoch]*epoch, sent, committed func(*write) bool) {
	first := map[*epoch]*write{} // each epoch's first write sent
	for _, w := range writes {
		if e := epochs[ek{w.proc, w.label, w.epoch}]; e != nil && sent(w) && first[e] == nil {
			first[e] = w
		}
	}
	reported := map[*epoch]bool{}
	for _, w := range writes {
		if !w.streamed || w.lastReq == 0 || !sent(w) || !committed(w) {
			continue
		}
		e := epochs[ek{w.proc, w.label, w.epoch}]
		if e == nil || reported[e] {
			continue
		}
		f := next[e]
		if f == nil || w.lastReq <= f.acqEnd {
			continue
		}
		reported[e] = true
		fw := "no write yet"
		if w1 := first[f]; w1 != nil {
			fw = fmt.Sprintf("its first write, of %s, began %s", w1.key, fmtT(w1.start))
			if w1.end != nil {
				fw += " and returned " + fmtT(w1.end.T)
			}
		}
		end := w.lastReq
		if w.end != nil {
			end = w.end.T
		}
		c.add(Violation{Invariant: InvLateCommit, Label: w.label, At: time.Unix(0, w.lastReq),
			Detail: fmt.Sprintf("%s committed the streamed %s under its epoch %d (acquired %s): its commit (request %d) was asked for at %s, %v after %s's later epoch %d was acquired (%s; %s)",
				w.proc, w.key, e.n, fmtT(e.acqEnd), w.reqs, fmtT(w.lastReq), time.Duration(w.lastReq-f.acqEnd).Round(time.Millisecond),
				f.proc, f.n, fmtT(f.acqEnd), fw),
			Procs: []string{w.proc, f.proc}, From: time.Unix(0, w.start), To: time.Unix(0, end)})
	}
}

// overwritten: an object that holds what epoch E wrote, where a later
// epoch of another process had written the same key successfully.
func (c *Check) overwritten(objects []Object, epochs map[ek]*epoch, startedBy map[string][]*write, ttl time.Duration) {
	for _, o := range objects {
		if o.Name == "LEASE" || admin.IsScratchKey(o.Name) {
			continue
		}
		fs := Fields(o.Body)
		n, _ := strconv.Atoi(fs["epoch"])
		e := epochs[ek{fs["proc"], o.Label, n}]
		if e == nil {
			continue
		}
		for _, w := range startedBy[o.Label+"\x00"+o.Key] {
			if w.proc == e.proc || w.end == nil || !w.end.OK {
				continue
			}
			f := epochs[ek{w.proc, w.label, w.epoch}]
			if f == nil || f.acqStart <= e.acqEnd {
				continue
			}
			c.add(Violation{Invariant: InvOverwritten, Label: o.Label, At: time.Unix(0, w.end.T),
				Detail: fmt.Sprintf("%s holds what %s wrote under its epoch %d (acquired %s), yet %s's write of it under the later epoch %d (acquired %s) succeeded at %s: the old holder's write replaced its successor's (%q)",
					o.Key, e.proc, e.n, fmtT(e.acqEnd), w.proc, f.n, fmtT(f.acqEnd), fmtT(w.end.T), o.Body),
				Procs: []string{e.proc, w.proc}, From: time.Unix(0, f.acqStart), To: o.Modified.Add(ttl)})
			break
		}
	}
}

// sealedChunks: every sealed manifest's chunks exist, are its own, and are
// whole.
func (c *Check) sealedChunks(objects []Object, objs map[string]map[string]Object, ttl time.Duration) {
	for _, mo := range objects {
		mf := Fields(mo.Body)
		if !strings.HasPrefix(mo.Name, "manifests/") || mf["sealed"] != "true" {
			continue
		}
		bad := func(detail string) {
			c.add(Violation{Invariant: InvSealed, Label: mo.Label, At: mo.Modified, Detail: detail,
				Procs: []string{mf["proc"]}, From: mo.Modified.Add(-2 * ttl), To: mo.Modified.Add(ttl)})
		}
		for _, ck := range strings.Split(mf["chunks"], ",") {
			co, ok := objs[mo.Label][ck]
			cf := Fields(co.Body)
			switch {
			case !ok:
				bad(fmt.Sprintf("the sealed manifest %s names chunk %s, which is not in the bucket", mo.Key, ck))
			case cf["tag"] != mf["tag"]:
				bad(fmt.Sprintf("the sealed manifest %s names chunk %s, which holds another backup's: %q", mo.Key, ck, co.Body))
			case cf["size"] != "" && co.Size >= 0 && cf["size"] != strconv.FormatInt(co.Size, 10):
				bad(fmt.Sprintf("the sealed manifest %s names the streamed chunk %s, which is %d bytes long, not the %s it was written with", mo.Key, ck, co.Size, cf["size"]))
			default:
				continue
			}
			break
		}
	}
}

// reportedLeft stands, among the process names of a scratch key's streams
// (Check.pending), for the writes whose error said that what they staged
// is left to the service's clean-up; no process is named so.
const reportedLeft = "(reported left)"

// pending: an upload left staged at the end must be one whose writer was
// killed (logged no exit) before it logged the write's outcome.
func (c *Check) pending(res *Result, startedBy map[string][]*write, scratch map[string]map[string]int, exited map[string]bool, ttl time.Duration) {
	if res.NoPending != "" {
		return
	}
	c.PendingListed = true
	killed := func(proc string) bool { return proc != "" && !exited[proc] }
	for _, p := range res.Pending {
		why, known := "", ""
		var procs []string
		switch {
		case p.Key == "":
			// The file driver's temporary files name no key: one is
			// allowed only if some process was killed.
			any := false
			for _, e := range res.Entries {
				if e.Ev == EvStart && killed(e.Proc) {
					any = true
					break
				}
			}
			if !any {
				why = "no process was killed, so every write's staging should have been removed"
			}
		case admin.IsScratchKey(p.Name):
			open := false
			logged := false
			failedCreate := false
			reported := false
			for proc, n := range scratch[p.Label+"\x00"+p.Key] {
				switch proc {
				case "":
					failedCreate = n > 0
					continue
				case reportedLeft:
					reported = n > 0
					continue
				}
				logged = true
				procs = append(procs, proc)
				if n > 0 && killed(proc) {
					open = true
				}
			}
			switch {
			case reported:
				c.PendingReported++
				continue
			case !logged:
				why = "no process logged a streamed write of that scratch key"
			case !open:
				why = "every streamed write of that scratch key logged its outcome, or its process exited"
				if failedCreate {
					why += "; one of them failed starting its multipart upload, which may have been created unknown to the driver"
					known = KnownOrphanedCreate
				}
			}
		default:
			var ws []string
			open, orphan, reported := false, false, false
			for _, w := range startedBy[p.Label+"\x00"+p.Key] {
				if w.end == nil && killed(w.proc) {
					open = true
					break
				}
				if w.end != nil {
					during := ""
					if t := p.Initiated.UnixNano(); !p.Initiated.IsZero() && t >= w.start-int64(time.Second) && t <= w.end.T+int64(time.Second) {
						if strings.Contains(w.end.Err, "left to the service's clean-up") {
							reported = true
							break
						}
						during = "; the upload was begun while that write ran, and the write returned without aborting it or saying that it was left (a creation whose reply was lost or whose request was cancelled in flight, which the driver's sweep did not find)"
						orphan = true
					}
					ws = append(ws, fmt.Sprintf("%s logged its outcome (%s)%s", w.proc, outcome(w.end), during))
				} else {
					ws = append(ws, fmt.Sprintf("%s exited without logging its outcome", w.proc))
				}
			}
			if reported {
				c.PendingReported++
				continue
			}
			if !open {
				why = "no write of it was cut short by a kill"
				if len(ws) > 0 {
					why += ": " + strings.Join(ws, "; ")
				}
				if orphan {
					known = KnownOrphanedCreate
				}
			}
			for _, w := range startedBy[p.Label+"\x00"+p.Key] {
				procs = append(procs, w.proc)
			}
		}
		if why == "" {
			c.PendingKilled++
			continue
		}
		at := p.Initiated
		if at.IsZero() {
			at = res.End
		}
		c.add(Violation{Invariant: InvPending, Label: p.Label, At: at,
			Detail: fmt.Sprintf("an upload was left staged at the end: %s of %q, begun %s; %s", p.Upload, p.Key, at.UTC().Format("15:04:05.000"), why),
			Procs:  procs, From: at.Add(-ttl), To: at.Add(2 * ttl), Known: known})
	}
}

func outcome(e *Entry) string {
	if e.OK {
		return "committed, version " + e.Ver
	}
	return e.Err
}

// linearizable checks each LEASE object's history with Porcupine.
func (c *Check) linearizable(res *Result) {
	byLabel := leaseOps(res.Entries)
	labels := make([]string, 0, len(byLabel))
	for l := range byLabel {
		labels = append(labels, l)
	}
	sort.Strings(labels)
	for _, label := range labels {
		if label == Label(0) && res.Config.CLIBin != "" {
			continue // bucketlease hold writes p0's LEASE object unlogged
		}
		ops := byLabel[label]
		r := register.Check(ops, linearizeTimeout)
		c.LeaseOps += r.Ops
		switch {
		case r.TimedOut:
			c.Unlinearized = append(c.Unlinearized, label)
		case !r.Linearizable:
			var first, last int64
			for _, op := range ops {
				if first == 0 || op.Call < first {
					first = op.Call
				}
				last = max(last, op.Return, op.Call)
			}
			c.add(Violation{Invariant: InvLinearizable, Label: label, At: time.Unix(0, last),
				Detail: fmt.Sprintf("the %d requests on %s's LEASE object are not linearizable for a compare-and-swap register (Porcupine): a driver reported an answer the object's history cannot have given, or the service is not a register; %s",
					r.Ops, label, describeIllegal(r)),
				From: time.Unix(0, first), To: time.Unix(0, last)})
		}
	}
}

// describeIllegal names the operations Porcupine could not linearize
// beyond its longest partial linearization.
func describeIllegal(r register.Result) string {
	return fmt.Sprintf("the longest partial linearization Porcupine found covers %d of them", r.Longest)
}

func (c *Check) checkIntegrity(label, key string, o Object, m map[string]Object, ttl time.Duration) {
	bad := func(detail string) {
		c.add(Violation{Invariant: InvIntegrity, Label: label, At: o.Modified, Detail: detail,
			Procs: []string{Fields(o.Body)["proc"]}, From: o.Modified.Add(-2 * ttl), To: o.Modified.Add(ttl)})
	}
	l := Fields(o.Body)
	mo, ok := m[l["manifest"]]
	if !ok {
		bad(fmt.Sprintf("LATEST (%q) names a manifest that does not exist", o.Body))
		return
	}
	mf := Fields(mo.Body)
	if mf["sealed"] != "true" || mf["k"] != l["k"] {
		bad(fmt.Sprintf("LATEST (%q) names %s, which is not the sealed backup k=%s: %q", o.Body, mo.Key, l["k"], mo.Body))
		return
	}
	for _, ck := range strings.Split(mf["chunks"], ",") {
		if co, ok := m[ck]; !ok || Fields(co.Body)["tag"] != mf["tag"] {
			bad(fmt.Sprintf("manifest %s names chunk %s, which is missing or not its own", mo.Key, ck))
			return
		}
	}
	if p := mf["parent"]; p != "" {
		if po, ok := m[p]; !ok || Fields(po.Body)["sealed"] != "true" {
			bad(fmt.Sprintf("manifest %s has parent %s, which is missing or unsealed", mo.Key, p))
		}
	}
}

// tagOf returns the backup tag a data key is named for, or "".
func tagOf(name string) string {
	switch {
	case strings.HasPrefix(name, "chunks/"):
		return strings.Split(strings.TrimPrefix(name, "chunks/"), "/")[0]
	case strings.HasPrefix(name, "manifests/"):
		return strings.TrimPrefix(name, "manifests/")
	}
	return ""
}

// dupID reports whether the nemesis ran a duplicate of id.
func dupID(res *Result, id string) bool {
	for _, ex := range res.Executed {
		if ex.Action.Kind == ActDuplicate && strings.Contains(ex.Note, "("+id+")") {
			return true
		}
	}
	return false
}

func fmtT(t int64) string { return time.Unix(0, t).UTC().Format("15:04:05.000") }

// Report renders a violation with the run's seed, the nemesis actions
// around it and the interleaving of the logs that led to it.
func (r *Result) Report(v Violation) string {
	var b strings.Builder
	cfg := r.Config
	fmt.Fprintf(&b, "VIOLATION %s on %s: %s\n", v.Invariant, v.Label, v.Detail)
	if v.Known != "" {
		fmt.Fprintf(&b, "  a known open defect (%s): see docs/chaos.md, What it found\n", v.Known)
	}
	fmt.Fprintf(&b, "  driver %s, seed %d, control %q, TTL %v, %d workers, %d leases, run %v\n",
		cfg.Driver, cfg.Seed, cfg.Control, cfg.TTL, cfg.Workers, cfg.Leases, cfg.Duration)
	fmt.Fprintf(&b, "  replay the schedule: scripts/chaos --driver %s --seed %d --duration %v --ttl %v --workers %d --leases %d",
		cfg.Driver, cfg.Seed, cfg.Duration, cfg.TTL, cfg.Workers, cfg.Leases)
	if cfg.Control != "" {
		fmt.Fprintf(&b, " --control %s", cfg.Control)
	} else if cfg.CLIBin == "" {
		b.WriteString(" --cli=false")
	}
	fmt.Fprintf(&b, "\n  clock skews by slot: %v; wall clocks wrong from the start, by slot: %v\n", r.Skews, r.ClockOffsets)
	from, to := v.From.Add(-cfg.TTL), v.To.Add(cfg.TTL/2)
	if len(r.Schedule) <= 40 {
		fmt.Fprintf(&b, "  the seed's whole schedule (offsets from the start):\n%s", FormatSchedule(r.Schedule))
	} else {
		fmt.Fprintf(&b, "  the seed's whole schedule: %s\n", filepath.Join(cfg.Dir, "schedule.txt"))
	}
	fmt.Fprintf(&b, "  carried out: %d of %d planned actions; those from %s to %s (offsets from the start %s):\n",
		len(r.Executed), len(r.Schedule), from.UTC().Format("15:04:05.000"), to.UTC().Format("15:04:05.000"),
		r.Start.UTC().Format("15:04:05.000"))
	n := 0
	for _, ex := range r.Executed {
		if ex.At.Before(from.Add(-2*cfg.TTL)) || ex.At.After(to) {
			continue
		}
		n++
		fmt.Fprintf(&b, "    %s  %s  %s\n", ex.At.UTC().Format("15:04:05.000"), ex.Action, ex.Note)
	}
	if n == 0 {
		b.WriteString("    (none)\n")
	}
	involved := map[string]bool{}
	for _, p := range v.Procs {
		involved[p] = true
	}
	var lines []string
	for _, e := range r.Entries {
		if e.T < from.UnixNano() || e.T > to.UnixNano() || (e.Prefix != v.Label && e.Prefix != "") ||
			e.Ev == EvAcquireStart || e.Ev == EvAcquireFail && e.Err == "held" {
			continue
		}
		key := e.Ev == EvAcquireOK || e.Ev == EvAcquireFail || e.Ev == EvLease && e.Kind != "renewed" || e.Ev == EvLostRead ||
			e.Ev == EvReleaseStart || e.Ev == EvStart || e.Ev == EvExit
		if involved[e.Proc] || key {
			lines = append(lines, "    "+e.String())
		}
	}
	const maxLines = 120
	if len(lines) > maxLines {
		cut := len(lines) - maxLines
		lines = append(append(lines[:maxLines/2:maxLines/2], fmt.Sprintf("    ... %d lines left out ...", cut)), lines[len(lines)-maxLines/2:]...)
	}
	fmt.Fprintf(&b, "  interleaving (%s: every line of %s but acquire attempts refused as held, every lease change, and every acquire that failed otherwise):\n",
		v.Label, strings.Join(v.Procs, ", "))
	b.WriteString(strings.Join(lines, "\n"))
	b.WriteString("\n")
	return b.String()
}

// Summary renders the run's numbers: processes started, nemesis actions by
// kind, writes, lease transfers, violations and the worst takeover time as
// a multiple of the TTL.
func (r *Result) Summary() string {
	kinds := map[string]int{}
	for _, ex := range r.Executed {
		if !strings.HasPrefix(ex.Note, "skipped") && !strings.HasPrefix(ex.Note, "failed") {
			kinds[ex.Action.Kind]++
		}
	}
	var ks []string
	for k, n := range kinds {
		ks = append(ks, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(ks)
	c := r.Check
	worst := time.Duration(0)
	for _, t := range c.Takeovers {
		worst = max(worst, t)
	}
	w := "none measured"
	if len(c.Takeovers) > 0 {
		w = fmt.Sprintf("%.2f TTL (%v, %d drills)", float64(worst)/float64(r.Config.TTL), worst.Round(time.Millisecond), len(c.Takeovers))
	}
	if c.TakersTimedOut > 0 {
		w += fmt.Sprintf(", %d taken by a worker that then ran out of its deadline", c.TakersTimedOut)
	}
	lin := ""
	if len(c.Unlinearized) > 0 {
		lin = " (not finished in time: " + strings.Join(c.Unlinearized, ",") + ")"
	}
	ctl := ""
	if r.Config.Control != "" {
		ctl = " control=" + r.Config.Control
	}
	pend := fmt.Sprintf("pending-left=%d (killed writers' %d, reported left by the write %d, aborted by the harness %d, still listed after %d)", len(r.Pending), c.PendingKilled, c.PendingReported, r.Cleaned, r.Left)
	if r.NoPending != "" {
		pend = "pending-left=not-listed (" + r.NoPending + ")"
	}
	if r.CleanErr != "" {
		pend += " clean-up errors: " + r.CleanErr
	}
	refusedProcs := "none"
	if len(c.ClockRefusedProcs) > 0 {
		refusedProcs = strings.Join(c.ClockRefusedProcs, ",")
	}
	clk := fmt.Sprintf("clock-offset-procs=%d refused-clock=%d (procs %s) fenced-clock=%d", len(c.ClockOffsetProcs), c.ClockRefused, refusedProcs, c.ClockFenced)
	return fmt.Sprintf("driver=%s seed=%d%s ran=%v ttl=%v workers=%d leases=%d processes=%d actions[%s] epochs=%d transfers=%d writes-ok=%d writes-sent=%d refused-by-fence=%d streamed-ok=%d streamed-sent=%d streamed-aborted=%d streamed-abort-failed=%d %s lease-ops-linearized=%d%s %s %s violations=%d worst-takeover=%s",
		r.Config.Driver, r.Config.Seed, ctl, r.End.Sub(r.Start).Round(time.Second), r.Config.TTL, r.Config.Workers, r.Config.Leases,
		r.Processes, strings.Join(ks, " "), c.Epochs, c.Transfers, c.Writes, c.WritesSent, c.Refused, c.StreamedOK, c.Streamed, c.StreamAborted, c.StreamAbortFailed, pend,
		c.LeaseOps, lin, clk, c.Late, len(c.Violations), w)
}
