package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/term"
	"github.com/mushroomdb/bucketlease/internal/location"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// stateMeaning says what a state means for a contender.
func stateMeaning(st admin.Status) string {
	switch st.State {
	case admin.Free:
		return "no lease; anyone may take it"
	case admin.Fresh:
		if st.Record != nil && st.Record.InstanceID == admin.BreakerID {
			return "broken by an operator; nobody may take it over until its broken holder's fence has passed"
		}
		return "held; nobody may take it over"
	case admin.Stale:
		return "not renewed within its TTL; the next contender takes it over"
	case admin.Released:
		return "released by its holder; anyone may take it"
	case admin.Suspect:
		return st.Reason
	default:
		return ""
	}
}

// PrintStatus prints st for people, then the rows that more adds (show's
// pending uploads).
func PrintStatus(w io.Writer, loc *location.Location, st admin.Status, more ...func(row func(k, v string))) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	defer tw.Flush()
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, term.Safe(v)) }
	defer func() {
		for _, m := range more {
			m(row)
		}
	}()
	row("lease", st.Key+" on "+loc.String())
	row("state", st.State.String()+": "+stateMeaning(st))
	if st.State == admin.Free {
		row("clocks", clocksText(st.Service))
		return
	}
	if r := st.Record; r != nil {
		row("holder", HolderName(r.InstanceID))
		if h := holderDescription(r.Holder); h != "" {
			row("process", h)
		}
		row("acquired", fmt.Sprintf("%s (%s)", Ago(st.Now, acquiredSecond(*r)), UTC(acquiredSecond(*r))))
		row("renewed", fmt.Sprintf("%s (%s)", Ago(st.Now, r.RenewedAt), UTC(r.RenewedAt)))
		row("ttl", r.TTL().String())
		row("epoch", epochText(r.Epoch))
	} else {
		row("holder", "unknown: the object is not a lease record")
	}
	row("takeover", takeoverText(st))
	row("version", string(st.Version))
	row("clocks", clocksText(st.Service))
	if so, ok := st.StampOffset(); ok {
		row("stamp", fmt.Sprintf("renewed_at is %v from the service's modification time, to the second: the holder's clock's offset less its write's travel",
			so.Round(time.Second)))
	}
}

// epochText is the record's epoch, or why it has none.
func epochText(e uint64) string {
	if e == 0 {
		return "none: written by a version of the lease that keeps no epoch, or by another implementation"
	}
	return strconv.FormatUint(e, 10)
}

// clocksText says how records are judged: against the service's clock,
// with this machine's offset from it, or on the machines' clocks alone.
func clocksText(svc *admin.ServiceClock) string {
	if svc == nil {
		return "assumed synchronised; the driver reports no service time, so records are judged on this machine's clock alone"
	}
	return "checked against the service's; " + svc.String()
}

func takeoverText(st admin.Status) string {
	switch {
	case st.State == admin.Suspect:
		return "once a contender has seen this version unchanged for one of its own TTLs"
	case !st.TakeoverAt.After(st.Now):
		return "now"
	case st.Record != nil && st.Record.InstanceID == admin.BreakerID:
		return fmt.Sprintf("in %v (%s), when the break's record goes stale (a TTL after the broken holder's last renewal, or after the service stored the break, whichever is later)",
			st.TakeoverAt.Sub(st.Now).Round(time.Second), UTC(st.TakeoverAt))
	default:
		return fmt.Sprintf("in %v (%s), if its holder stops renewing",
			st.TakeoverAt.Sub(st.Now).Round(time.Second), UTC(st.TakeoverAt))
	}
}

// holderDescription renders what a holder says about itself, such as
// "pg_dump, pid 4242 on db-7 as backup", or "" when it said nothing. It is
// the holder's own claim, for people; the lease never trusts it.
func holderDescription(h *admin.HolderInfo) string {
	if h == nil {
		return ""
	}
	var parts []string
	if h.Tool != "" {
		parts = append(parts, h.Tool)
	}
	where := ""
	if h.PID != 0 {
		where = fmt.Sprintf("pid %d", h.PID)
	}
	if h.Host != "" {
		where = strings.TrimSpace(where + " on " + h.Host)
	}
	if h.User != "" {
		where = strings.TrimSpace(where + " as " + h.User)
	}
	if where != "" {
		parts = append(parts, where)
	}
	return strings.Join(parts, ", ") + " (as the holder says)"
}

// utcMilli is a time for show --json, to the millisecond like the *_ago_s
// fields beside it.
func utcMilli(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// acquiredSecond is when the record's lease was acquired, to the second:
// the lease writes acquired_at as the second of the acquire plus a random
// fraction that names the incarnation, so its fraction is no time at all,
// and read as one it can put the acquire after the first renewal, or in
// the future.
func acquiredSecond(r admin.Record) time.Time { return r.AcquiredAt.Truncate(time.Second) }
