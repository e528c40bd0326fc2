//go:build linux

package chaos

import (
	"fmt"
	"strconv"
	"time"

	"github.com/mushroomdb/bucketlease/lease/admin"
)

// lateWrites holds the stamps and the readers' late check to what the logs
// prove (InvStamp, InvLateWrite), and counts what it judged.
//
// The check is the one a restore tool runs: admin.LateBy over the eras of
// the prefix's holders. A reader after the run knows only the last
// eight of them from the LEASE object, so the checker gathers the eras
// of every record the workers' leases wrote (their EvLeaseCall lines) and
// of the record left at the end, keeping for each epoch the earliest
// beginning any record gave (each is no earlier than the holder took the
// prefix, so the earliest is too).
//
// The truth comes from the logs, on the machine's clock, which here is
// also the service's (every server runs on this machine):
//
//   - an object certainly landed after epoch F began when its modification
//     time is at least the service clock's resolution after F's acquire
//     returned: F's Began is an answer's Date (no later than that return)
//     plus the resolution. Such an object of an older epoch must be
//     flagged; one the check does not flag is a miss.
//   - an object certainly landed before epoch A began when the write that
//     made it (the one whose outcome names its version) returned before
//     A's acquire began. Such an object flagged late after A is a false
//     alarm.
//
// Objects in between (landed within a resolution of a takeover) may go
// either way, as admin.LateBy documents. Not judged where the driver keeps
// no metadata, nor in the skew-beyond control, whose workers' driver
// reports no service time, so that their records say nothing of when a
// holder began.
func (c *Check) lateWrites(res *Result, epochs map[ek]*epoch, startedBy map[string][]*write) {
	if !res.Stamps {
		c.Late = "not judged: the driver keeps no metadata"
		return
	}
	judge := res.Config.Control != ControlSkewBeyond
	eras := runEras(res)
	byLease := map[string]map[uint64]*epoch{}
	for _, e := range epochs {
		if e.lease == 0 {
			continue
		}
		if byLease[e.label] == nil {
			byLease[e.label] = map[uint64]*epoch{}
		}
		byLease[e.label][e.lease] = e
	}
	for _, o := range res.Objects {
		if o.Name == "LEASE" || admin.IsScratchKey(o.Name) {
			continue
		}
		fs := Fields(o.Body)
		n, _ := strconv.Atoi(fs["epoch"])
		writer := epochs[ek{fs["proc"], o.Label, n}]
		st, stamped := admin.StampOf(o.Metadata)
		if writer != nil && writer.lease != 0 {
			want := admin.Stamp{Epoch: writer.lease, Instance: admin.StampedInstance(writer.id)}
			if st != want {
				c.add(Violation{Invariant: InvStamp, Label: o.Label, At: o.Modified,
					Detail: fmt.Sprintf("%s, written by %s under its epoch %d (the lease's epoch %d, instance %s), carries the stamp %+v (metadata %v): a reader cannot judge it",
						o.Key, writer.proc, writer.n, writer.lease, writer.id, st, o.Metadata),
					Procs: []string{writer.proc}, From: time.Unix(0, writer.acqStart), To: o.Modified.Add(res.Config.TTL)})
			}
		}
		if !stamped {
			continue
		}
		c.Stamped++
		if !judge || o.Listed.IsZero() {
			continue
		}
		after, by, late := admin.LateBy(eras[o.Label], st, o.Listed)
		if late {
			c.LateFlagged++
		}
		svc := res.Leases[o.Label].Service
		if svc == nil {
			continue // no service time: no record says when a holder began
		}
		resolution := svc.Resolution
		var certain *epoch // the first epoch after the stamp's that o certainly landed after
		for e, f := range byLease[o.Label] {
			if e > st.Epoch && o.Listed.UnixNano() >= f.acqEnd+int64(resolution) && (certain == nil || f.acqEnd < certain.acqEnd) {
				certain = f
			}
		}
		if certain != nil {
			c.LateCertain++
			if !late {
				c.add(Violation{Invariant: InvLateWrite, Label: o.Label, At: o.Listed,
					Detail: fmt.Sprintf("%s (stamped epoch %d by %s) was stored at %s, %v after %s's lease of epoch %d was acquired (%s), yet the late check, by %d eras, finds it in time",
						o.Key, st.Epoch, fs["proc"], o.Listed.UTC().Format("15:04:05.000"), time.Duration(o.Listed.UnixNano()-certain.acqEnd).Round(time.Millisecond),
						certain.proc, certain.lease, fmtT(certain.acqEnd), len(eras[o.Label])),
					Procs: []string{fs["proc"], certain.proc}, From: time.Unix(0, certain.acqStart), To: o.Listed})
			}
		}
		if !late {
			continue
		}
		a := byLease[o.Label][after.Epoch]
		if a == nil || (a.kind == "cli" && a.detail != "") {
			continue // when that epoch's acquire began is not known
		}
		for _, w := range startedBy[o.Label+"\x00"+o.Key] {
			if w.proc == fs["proc"] && w.end != nil && w.end.OK && normVersion(w.end.Ver) == o.Version && w.end.T < a.acqStart {
				c.add(Violation{Invariant: InvLateWrite, Label: o.Label, At: time.Unix(0, w.end.T),
					Detail: fmt.Sprintf("the late check flags %s (stamped epoch %d by %s) as written %v after epoch %d began (%s), but its write returned at %s, before %s began to acquire that lease (%s)",
						o.Key, st.Epoch, w.proc, by, after.Epoch, after.Began.UTC().Format("15:04:05.000"), fmtT(w.end.T), a.proc, fmtT(a.acqStart)),
					Procs: []string{w.proc, a.proc}, From: time.Unix(0, w.start), To: time.Unix(0, a.acqEnd)})
				break
			}
		}
	}
	c.Late = fmt.Sprintf("stamped=%d late-flagged=%d late-certain=%d", c.Stamped, c.LateFlagged, c.LateCertain)
	if !judge {
		c.Late = fmt.Sprintf("stamped=%d late=not-judged (no service time)", c.Stamped)
	}
}

// runEras returns, by label, the eras of every record the run's leases
// wrote to the LEASE object (as their EvLeaseCall lines carry them) and of
// the record read after the run, one per epoch, with the earliest
// beginning any of them gave.
func runEras(res *Result) map[string][]admin.Era {
	earliest := map[string]map[uint64]time.Time{}
	add := func(label string, es []admin.Era) {
		if earliest[label] == nil {
			earliest[label] = map[uint64]time.Time{}
		}
		for _, e := range es {
			if t, ok := earliest[label][e.Epoch]; !ok || e.Began.Before(t) {
				earliest[label][e.Epoch] = e.Began
			}
		}
	}
	for _, e := range res.Entries {
		if e.Ev == EvLeaseCall && len(e.Eras) > 0 {
			add(e.Prefix, e.Eras)
		}
	}
	for label, st := range res.Leases {
		add(label, st.Eras())
	}
	out := map[string][]admin.Era{}
	for label, m := range earliest {
		for n, t := range m {
			out[label] = append(out[label], admin.Era{Epoch: n, Began: t})
		}
	}
	return out
}
