package report

import (
	"encoding/json"
	"io"
	"time"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/filelock"
	"github.com/mushroomdb/bucketlease/internal/location"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// ShowJSON is show's --json output.
type ShowJSON struct {
	URL          string  `json:"url"`
	Key          string  `json:"key"`
	State        string  `json:"state"`
	Holder       string  `json:"holder,omitempty"`
	Version      string  `json:"version,omitempty"`
	AcquiredAt   string  `json:"acquired_at,omitempty"`
	RenewedAt    string  `json:"renewed_at,omitempty"`
	AcquiredAgoS float64 `json:"acquired_ago_s,omitempty"`
	RenewedAgoS  float64 `json:"renewed_ago_s,omitempty"`
	TTLSeconds   *int64  `json:"ttl_s,omitempty"`
	// Epoch is the record's epoch (admin.Record.Epoch); absent for a
	// record without one.
	Epoch       uint64  `json:"epoch,omitempty"`
	TakeoverAt  string  `json:"takeover_at,omitempty"`
	TakeoverInS float64 `json:"takeover_in_s"`
	Reason      string  `json:"reason,omitempty"`
	Now         string  `json:"now"`
	// Process is what the holder says about itself (host, pid, user,
	// tool), when its record carries it: informational, never proof.
	Process *admin.HolderInfo `json:"process,omitempty"`
	// Pending is what the prefix has pending: uploads started and not
	// completed, where the driver can list them.
	Pending *PendingJSON `json:"pending,omitempty"`
	// Clocks is "service" when the record was judged against the
	// service's clock too, "assumed synchronised" when the driver reports
	// no service time.
	Clocks string `json:"clocks"`
	// OffsetS is this machine's wall clock minus the service's, in
	// seconds, within ± OffsetUncertaintyS; StampOffsetS is the record's
	// renewed_at minus the lease object's modification time on the
	// service's clock. Absent without service time.
	OffsetS            *float64 `json:"offset_s,omitempty"`
	OffsetUncertaintyS *float64 `json:"offset_uncertainty_s,omitempty"`
	StampOffsetS       *float64 `json:"stamp_offset_s,omitempty"`
	// ScratchKeys are scratch keys beside the lease object that a probe
	// left (admin.IsScratchKey): a process that died during one.
	ScratchKeys []ScratchKeyJSON `json:"scratch_keys,omitempty"`
	// LockHolders are the processes holding the file driver's lock on
	// the lease object (file:// on Linux): one writing it now, or one
	// stopped while it did, which blocks every write of it.
	LockHolders []filelock.Holder `json:"lock_holders,omitempty"`
}

type ScratchKeyJSON struct {
	Key      string `json:"key"`
	Modified string `json:"modified,omitempty"`
}

func StatusJSON(loc *location.Location, st admin.Status) ShowJSON {
	j := ShowJSON{URL: loc.String(), Key: st.Key, State: st.State.String(), Holder: st.Holder(),
		Version: string(st.Version), Reason: st.Reason, Now: st.Now.UTC().Format(time.RFC3339Nano)}
	if r := st.Record; r != nil {
		j.AcquiredAt, j.RenewedAt = UTC(acquiredSecond(*r)), utcMilli(r.RenewedAt)
		j.AcquiredAgoS = Seconds(st.Now.Sub(acquiredSecond(*r)))
		j.RenewedAgoS = Seconds(st.Now.Sub(r.RenewedAt))
		ttl := r.TTLSeconds
		j.TTLSeconds = &ttl
		j.Epoch = r.Epoch
		j.Process = r.Holder
	}
	j.Clocks = "assumed synchronised"
	if svc := st.Service; svc != nil {
		off, unc := Seconds(svc.Offset), Seconds(svc.Uncertainty)
		j.Clocks, j.OffsetS, j.OffsetUncertaintyS = "service", &off, &unc
	}
	if so, ok := st.StampOffset(); ok {
		s := Seconds(so)
		j.StampOffsetS = &s
	}
	if !st.TakeoverAt.IsZero() {
		j.TakeoverAt = utcMilli(st.TakeoverAt)
		j.TakeoverInS = max(Seconds(st.TakeoverAt.Sub(st.Now)), 0)
	} else {
		j.TakeoverInS = -1 // suspect: it depends on a contender's watch
	}
	return j
}

func Seconds(d time.Duration) float64 {
	return float64(d.Round(time.Millisecond)) / float64(time.Second)
}

func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
