package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/lease"
)

var showCommand = &command{
	name:    "show",
	args:    "URL [--json]",
	summary: "show who holds the lease, since when, and when it could be taken over",
	help: `Reads the lease object {prefix}/LEASE and says what a contender would make of
it now, by this machine's clock: its state, its holder, when it was acquired
and last renewed, its TTL, when it could be taken over and its version (which
"bucketlease break --version" needs). It writes and creates nothing; on
file:// a directory that does not exist is an error (exit 1).

It also lists what the prefix has pending: uploads started under it and
neither completed nor aborted (S3 multipart uploads, which the service keeps
until they are aborted; on file:// the staged files of puts in progress or
killed, which the next write removes), with their keys, start times and
upload ids, where the driver can list them (s3, r2, minio, file); "not
available on this driver" elsewhere; and any scratch key a lease probe left beside the lease object
(LEASE.acquire-probe-…, a process that died during its probe).

States:
  free      there is no lease; anyone may take it
  fresh     renewed less than its TTL ago; nobody may take it over
  stale     not renewed for its TTL or longer; the next contender takes it over
  released  its holder released it (ttl_s 0); anyone may take it
  suspect   stamped more than its TTL in the future, with a TTL over 1h, or not
            a lease record at all; a contender takes it over once it has seen
            it unchanged for one of its own TTLs

Examples:
  bucketlease show file:///var/backups/db1
  bucketlease show 's3://my-bucket/backups/db1?region=eu-west-1' --json | jq -r .version`,
	setup: setupShow,
}

func setupShow(fs *flag.FlagSet) runFunc {
	asJSON := fs.Bool("json", false, "print one JSON object")
	timeout := new(time.Duration)
	durationVar(fs, timeout, "timeout", defaultTimeout, "give up on a request the service has not answered after this long")
	return func(ctx context.Context, e *env, args []string) error {
		rawURL, err := oneURL(fs, args)
		if err != nil {
			return err
		}
		if *timeout <= 0 {
			return usageErrorf("--timeout %v: it must be positive", *timeout)
		}
		st, b, prefix, err := inspect(ctx, rawURL, *timeout)
		if err != nil {
			return err
		}
		if b != nil {
			defer driver.Close(b)
		}
		pend := listPending(ctx, b, prefix, *timeout)
		if b == nil && fileDir(rawURL) != "" {
			pend = fileStaged(ctx, rawURL, *timeout)
		}
		scratch := leftoverScratchKeys(ctx, rawURL, b, prefix, *timeout)
		if *asJSON {
			j := statusJSON(rawURL, st)
			j.Pending = pend.json()
			for _, o := range scratch {
				j.ScratchKeys = append(j.ScratchKeys, scratchKeyJSON{Key: o.Key, Modified: utcOrEmpty(o.ModTime)})
			}
			return writeJSON(e.stdout, j)
		}
		printStatus(e.stdout, rawURL, st, func(row func(k, v string)) {
			pend.rows(rawURL, row)
			scratchRows(scratch, row)
		})
		return nil
	}
}

// inspect opens the URL and reads its lease. It creates nothing, not even
// on file://. It returns the bucket it opened and the prefix, or a nil
// bucket when a file:// directory without a LEASE was found free without
// opening the driver.
func inspect(ctx context.Context, rawURL string, timeout time.Duration) (lease.Status, driver.Bucket, string, error) {
	if err := fileLeaseNotObject(rawURL); err != nil {
		return lease.Status{}, nil, "", err
	}
	if free, err := fileLeaseAbsent(rawURL); err != nil || free {
		return freeStatus(), nil, "", err
	}
	b, prefix, err := openURL(ctx, rawURL)
	if err != nil {
		return lease.Status{}, nil, "", err
	}
	st, err := lease.Inspect(ctx, withDeadlines(b, timeout, displayURL(rawURL), "--timeout"), prefix, time.Now())
	if err != nil {
		return lease.Status{}, nil, "", explain(rawURL, fmt.Errorf("%s: %w", displayURL(rawURL), err))
	}
	return st, b, prefix, nil
}

// maxScratchLooked bounds how many keys beginning {prefix}/LEASE. show
// looks at for scratch keys.
const maxScratchLooked = 1000

// leftoverScratchKeys returns the scratch keys beside the lease object
// ({prefix}/LEASE.acquire-probe-…, and the break and stream probes'):
// each lease probe deletes its own, so one that is there was left by a
// process that died during its probe. It looks at no more than
// maxScratchLooked keys, and says nothing when it cannot list: the lease
// is what show is for. b is nil for a file:// directory found free without
// opening the driver, which is read directly.
func leftoverScratchKeys(ctx context.Context, rawURL string, b driver.Bucket, prefix string, timeout time.Duration) []driver.Object {
	base := strings.TrimPrefix(prefix+"/", "/") + lease.Key("") + "."
	var found []driver.Object
	if b == nil {
		dir := fileDir(rawURL)
		if dir == "" {
			return nil
		}
		f, err := os.Open(dir)
		if err != nil {
			return nil
		}
		defer f.Close()
		for range maxScratchLooked / 100 {
			entries, err := f.ReadDir(100)
			for _, d := range entries {
				if name := d.Name(); strings.HasPrefix(name, base) && lease.IsScratchKey(name) && d.Type().IsRegular() {
					o := driver.Object{Key: name}
					if fi, err := d.Info(); err == nil {
						o.ModTime = fi.ModTime()
					}
					found = append(found, o)
				}
			}
			if err != nil || len(entries) == 0 {
				break
			}
		}
		slices.SortFunc(found, func(a, b driver.Object) int { return strings.Compare(a.Key, b.Key) })
		return found
	}
	c, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	n := 0
	for o, err := range driver.List(c, b, base) {
		if err != nil || n == maxScratchLooked {
			break
		}
		n++
		if lease.IsScratchKey(o.Key) {
			found = append(found, o)
		}
	}
	return found
}

// scratchRows writes the leftover scratch keys as rows of printStatus.
func scratchRows(keys []driver.Object, row func(k, v string)) {
	if len(keys) == 0 {
		return
	}
	what := "1 key"
	if len(keys) > 1 {
		what = fmt.Sprintf("%d keys", len(keys))
	}
	row("scratch", what+" left by a probe that did not finish, holding nothing; safe to delete once a minute old")
	now := time.Now()
	for _, o := range keys {
		when := ""
		if !o.ModTime.IsZero() {
			when = fmt.Sprintf(", written %s (%s)", ago(now, o.ModTime), utc(o.ModTime))
		}
		row("", o.Key+when)
	}
}

func utcOrEmpty(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return utc(t)
}

// maxPendingShown bounds how many pending uploads show lists.
const maxPendingShown = 100

// pendingUploads is what show found pending under the prefix: uploads
// started and neither completed nor aborted (S3 multipart uploads), which
// the service keeps, and bills, until something aborts them.
type pendingUploads struct {
	available bool   // the driver can list them (driver.PendingLister)
	under     string // the key prefix listed
	uploads   []driver.Pending
	truncated bool // more than maxPendingShown, or more than maxPendingScanned looked at
	err       error
}

// listPending lists the uploads pending under prefix through b, if its
// driver can (driver.PendingLister), within timeout. b is nil when the
// driver was not opened (a free file:// directory: fileStaged lists its
// staged files).
//
// It asks for the uploads under the prefix first. Some services match that
// prefix against whole keys only (MinIO lists an object's uploads for its
// exact name and none for a "directory"), so when that finds none it looks
// at the bucket's uploads, at most maxPendingScanned of them, and keeps
// those under the prefix.
func listPending(ctx context.Context, b driver.Bucket, prefix string, timeout time.Duration) pendingUploads {
	p := pendingUploads{under: strings.TrimPrefix(prefix+"/", "/")}
	pl, ok := b.(driver.PendingLister)
	if b == nil || !ok {
		return p
	}
	p.available = true
	c, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if p.scan(c, pl, p.under, maxPendingShown+1); p.err == nil && p.available && len(p.uploads) == 0 && p.under != "" {
		p.scan(c, pl, "", maxPendingScanned)
	}
	if errors.Is(p.err, context.DeadlineExceeded) && ctx.Err() == nil {
		p.err = fmt.Errorf("no answer within %v (--timeout): %w", timeout, p.err)
	}
	return p
}

// fileStaged lists the staged files of a free file:// directory, which
// show found free without opening the driver: it opens the driver only if
// that creates nothing (the driver's folder .bucketlease, with its locks
// and tmp, is there). Without that folder the driver never staged a write
// there, so nothing is pending.
func fileStaged(ctx context.Context, rawURL string, timeout time.Duration) pendingUploads {
	meta := filepath.Join(fileDir(rawURL), ".bucketlease")
	for _, d := range []string{"locks", "tmp"} {
		if fi, err := os.Stat(filepath.Join(meta, d)); err != nil || !fi.IsDir() {
			return pendingUploads{available: true}
		}
	}
	b, prefix, err := openURL(ctx, rawURL)
	if err != nil {
		return pendingUploads{available: true, err: err}
	}
	defer driver.Close(b)
	return listPending(ctx, b, prefix, timeout)
}

// maxPendingScanned bounds how many of a bucket's uploads show looks at
// for those under its prefix.
const maxPendingScanned = 10_000

// scan lists the pending uploads whose key starts with listPrefix, looking
// at most at limit of them, and keeps those under p.under.
func (p *pendingUploads) scan(ctx context.Context, pl driver.PendingLister, listPrefix string, limit int) {
	seen := 0
	for u, err := range pl.ListPending(ctx, listPrefix) {
		switch {
		case errors.Is(err, driver.ErrUnsupported):
			p.available = false
			return
		case err != nil:
			p.err = err
			return
		case seen == limit:
			p.truncated = true
			return
		}
		seen++
		if !strings.HasPrefix(u.Key, p.under) {
			continue
		}
		if len(p.uploads) == maxPendingShown {
			p.truncated = true
			return
		}
		p.uploads = append(p.uploads, u)
	}
}

// pendingJSON is show --json's "pending".
type pendingJSON struct {
	// Available is false when the driver cannot list pending uploads.
	Available bool                `json:"available"`
	Prefix    string              `json:"prefix"`
	Uploads   []pendingUploadJSON `json:"uploads"`
	Truncated bool                `json:"truncated,omitempty"`
	Error     string              `json:"error,omitempty"`
}

type pendingUploadJSON struct {
	Key       string `json:"key"`
	Upload    string `json:"upload"`
	Initiated string `json:"initiated,omitempty"`
}

func (p pendingUploads) json() *pendingJSON {
	j := &pendingJSON{Available: p.available, Prefix: p.under, Uploads: []pendingUploadJSON{}, Truncated: p.truncated}
	if p.err != nil {
		j.Error = p.err.Error()
	}
	for _, u := range p.uploads {
		uj := pendingUploadJSON{Key: u.Key, Upload: u.Upload}
		if !u.Initiated.IsZero() {
			uj.Initiated = utc(u.Initiated)
		}
		j.Uploads = append(j.Uploads, uj)
	}
	return j
}

// rows writes the pending uploads for people, as rows of printStatus.
func (p pendingUploads) rows(rawURL string, row func(k, v string)) {
	where := p.under
	if where == "" {
		where = "the bucket"
	}
	switch {
	case !p.available:
		row("pending", fmt.Sprintf("not available on this driver (%s)", schemeOf(rawURL)))
	case p.err != nil:
		row("pending", fmt.Sprintf("could not list the uploads pending under %s: %s", where, oneLine(p.err.Error())))
	case len(p.uploads) == 0 && p.truncated:
		row("pending", fmt.Sprintf("none under %s among the first %d uploads of the bucket (it has more)", where, maxPendingScanned))
	case len(p.uploads) == 0:
		row("pending", fmt.Sprintf("none: no upload under %s was started and left uncompleted", where))
	default:
		n := fmt.Sprintf("%d uploads", len(p.uploads))
		switch {
		case p.truncated && len(p.uploads) == maxPendingShown:
			n = fmt.Sprintf("more than %d uploads (the first %d shown)", maxPendingShown, maxPendingShown)
		case p.truncated:
			n = fmt.Sprintf("%d uploads (among the first %d of the bucket; it has more)", len(p.uploads), maxPendingScanned)
		case len(p.uploads) == 1:
			n = "1 upload"
		}
		why := "a put still running, or one cut off: the service keeps its parts until they are aborted"
		if schemeOf(rawURL) == "file" {
			why = "a put still running, or one killed: the next write removes those whose writer is gone"
		}
		row("pending", fmt.Sprintf("%s under %s started and neither completed nor aborted (%s)", n, where, why))
		now := time.Now()
		for _, u := range p.uploads {
			started := ""
			if !u.Initiated.IsZero() {
				started = fmt.Sprintf(", started %s (%s)", ago(now, u.Initiated), utc(u.Initiated))
			}
			row("", fmt.Sprintf("%s%s, upload %s", u.Key, started, u.Upload))
		}
	}
}

// showJSON is show's --json output.
type showJSON struct {
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
	TakeoverAt   string  `json:"takeover_at,omitempty"`
	TakeoverInS  float64 `json:"takeover_in_s"`
	Reason       string  `json:"reason,omitempty"`
	Now          string  `json:"now"`
	// Process is what the holder says about itself (host, pid, user,
	// tool), when its record carries it: informational, never proof.
	Process *lease.HolderInfo `json:"process,omitempty"`
	// Pending is what the prefix has pending: uploads started and not
	// completed, where the driver can list them.
	Pending *pendingJSON `json:"pending,omitempty"`
	// ScratchKeys are scratch keys beside the lease object that a probe
	// left (lease.IsScratchKey): a process that died during one.
	ScratchKeys []scratchKeyJSON `json:"scratch_keys,omitempty"`
}

type scratchKeyJSON struct {
	Key      string `json:"key"`
	Modified string `json:"modified,omitempty"`
}

func statusJSON(rawURL string, st lease.Status) showJSON {
	j := showJSON{URL: displayURL(rawURL), Key: st.Key, State: st.State.String(), Holder: st.Holder(),
		Version: string(st.Version), Reason: st.Reason, Now: st.Now.UTC().Format(time.RFC3339Nano)}
	if r := st.Record; r != nil {
		j.AcquiredAt, j.RenewedAt = utc(acquiredSecond(*r)), utcMilli(r.RenewedAt)
		j.AcquiredAgoS = seconds(st.Now.Sub(acquiredSecond(*r)))
		j.RenewedAgoS = seconds(st.Now.Sub(r.RenewedAt))
		ttl := r.TTLSeconds
		j.TTLSeconds = &ttl
		j.Process = r.Holder
	}
	if !st.TakeoverAt.IsZero() {
		j.TakeoverAt = utcMilli(st.TakeoverAt)
		j.TakeoverInS = max(seconds(st.TakeoverAt.Sub(st.Now)), 0)
	} else {
		j.TakeoverInS = -1 // suspect: it depends on a contender's watch
	}
	return j
}

func seconds(d time.Duration) float64 {
	return float64(d.Round(time.Millisecond)) / float64(time.Second)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// stateMeaning says what a state means for a contender.
func stateMeaning(st lease.Status) string {
	switch st.State {
	case lease.Free:
		return "no lease; anyone may take it"
	case lease.Fresh:
		if st.Record != nil && st.Record.InstanceID == lease.BreakerID {
			return "broken by an operator; nobody may take it over until its broken holder's fence has passed"
		}
		return "held; nobody may take it over"
	case lease.Stale:
		return "not renewed within its TTL; the next contender takes it over"
	case lease.Released:
		return "released by its holder; anyone may take it"
	case lease.Suspect:
		return st.Reason
	default:
		return ""
	}
}

// printStatus prints st for people, then the rows that more adds (show's
// pending uploads).
func printStatus(w io.Writer, rawURL string, st lease.Status, more ...func(row func(k, v string))) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	defer tw.Flush()
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, v) }
	defer func() {
		for _, m := range more {
			m(row)
		}
	}()
	row("lease", st.Key+" on "+displayURL(rawURL))
	row("state", st.State.String()+": "+stateMeaning(st))
	if st.State == lease.Free {
		return
	}
	if r := st.Record; r != nil {
		row("holder", holderName(r.InstanceID))
		if h := holderDescription(r.Holder); h != "" {
			row("process", h)
		}
		row("acquired", fmt.Sprintf("%s (%s)", ago(st.Now, acquiredSecond(*r)), utc(acquiredSecond(*r))))
		row("renewed", fmt.Sprintf("%s (%s)", ago(st.Now, r.RenewedAt), utc(r.RenewedAt)))
		row("ttl", r.TTL().String())
	} else {
		row("holder", "unknown: the object is not a lease record")
	}
	row("takeover", takeoverText(st))
	row("version", string(st.Version))
}

func takeoverText(st lease.Status) string {
	switch {
	case st.State == lease.Suspect:
		return "once a contender has seen this version unchanged for one of its own TTLs"
	case !st.TakeoverAt.After(st.Now):
		return "now"
	case st.Record != nil && st.Record.InstanceID == lease.BreakerID:
		return fmt.Sprintf("in %v (%s), when the broken holder's last renewal goes stale",
			st.TakeoverAt.Sub(st.Now).Round(time.Second), utc(st.TakeoverAt))
	default:
		return fmt.Sprintf("in %v (%s), if its holder stops renewing",
			st.TakeoverAt.Sub(st.Now).Round(time.Second), utc(st.TakeoverAt))
	}
}

// holderDescription renders what a holder says about itself, such as
// "pg_dump, pid 4242 on db-7 as backup", or "" when it said nothing. It is
// the holder's own claim, for people; the lease never trusts it.
func holderDescription(h *lease.HolderInfo) string {
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
func acquiredSecond(r lease.Record) time.Time { return r.AcquiredAt.Truncate(time.Second) }
