package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/bounded"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/exitcode"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/report"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/term"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/internal/location"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

var pruneCommand = &command{
	name:    "prune",
	args:    "URL --older-than D [--dry-run] [--json]",
	summary: "remove the pending uploads a dead writer left, never a live holder's",
	help: `Removes the uploads pending under the URL's prefix: streamed writes started
and neither committed nor aborted (S3 multipart uploads, which the service
keeps and bills until something aborts them; the file driver's staged
files), such as a put killed in the middle of its body leaves. It lists
them as show does, and aborts each one that:

  - was started at least --older-than ago (on the service's clock);
  - no live holder may still commit: for the lease of every prefix that
    contains its key (the URL's own, a nested or an enclosing prefix's),
    the lease is free, released or stale (its holder stopped renewing, and
    its fence closed every write it started), or it is fresh and the
    upload was started more than one TTL before the current holder's lease
    began (an earlier holder's, fenced before this one took over). An
    upload a live holder started since, however old, is kept, and so is
    every upload under a fresh record of "break --force" (the broken
    holder may write until it goes stale) or under a lease object that is
    not a lease record;
  - the driver can abort (on file://, a staged file whose process still
    runs is kept).

It prints each upload with what it did and why. --dry-run prints the same
and removes nothing. A writer that writes under the prefix without taking
the lease is judged by its upload's age alone: choose --older-than longer
than any such write runs. It exits 0 when every upload was removed or kept
by these rules, 1 if the listing, a lease's read or an abort failed (each
named), and 1 on a driver that cannot list pending uploads (gcs, azure:
GCS resumable sessions and Azure's uncommitted blocks expire after 7 days).

Examples:
  bucketlease prune s3://backups/db1 --older-than 24h --dry-run
  bucketlease prune file:///var/backups/db1 --older-than 1h`,
	setup: setupPrune,
}

func setupPrune(fs *flag.FlagSet) runFunc {
	var olderThan time.Duration
	var given bool
	fs.Var(requiredDuration{durationValue{&olderThan}, &given}, "older-than", "remove only uploads started at least this long ago, such as 1h or 24h (required; 0s: any age)")
	dry := fs.Bool("dry-run", false, "print what would be removed, and remove nothing")
	asJSON := fs.Bool("json", false, "print one JSON object: each upload with what was done and why, or the error with its exit code and class")
	timeout := timeoutFlag(fs, defaultTimeout, "give up on a request the service has not answered after this long")
	return func(ctx context.Context, e *env, args []string) error {
		loc, err := oneLocation(fs, args)
		if err != nil {
			return err
		}
		switch {
		case !given:
			return exitcode.Usagef("prune needs --older-than D, how long ago an upload must have been started to be removed (such as 1h; 0s for any age)")
		case olderThan < 0:
			return exitcode.Usagef("prune --older-than %v: it must not be negative (0s removes uploads of any age)", olderThan)
		}
		if err := refuseInProcess("prune", loc); err != nil {
			return err
		}
		if err := fileLeaseNotObject(loc); err != nil {
			return err
		}
		b, err := openLocation(ctx, loc)
		if err != nil {
			return err
		}
		defer location.Close(b)
		o := admin.PendingOptions{OlderThan: olderThan, DryRun: *dry, Timeout: *timeout}
		r, err := admin.RemovePending(ctx, bucket.New(bounded.New(b, *timeout, loc, "--timeout"), loc.Prefix), o)
		if errors.Is(err, driver.ErrUnsupported) && len(r.Uploads) == 0 {
			return fmt.Errorf("prune %s: the %s driver cannot list pending uploads, so it cannot remove them (%w)", loc, loc.Scheme, err)
		}
		if *asJSON {
			if jerr := report.WriteJSON(e.stdout, pruneJSONOf(r, o)); jerr != nil {
				return jerr
			}
		} else {
			printPruned(e.stdout, r, o, time.Now())
		}
		if err != nil {
			return explain(loc, err)
		}
		return nil
	}
}

// requiredDuration is a durationValue that records that it was given, and
// has no default to print.
type requiredDuration struct {
	durationValue
	given *bool
}

func (v requiredDuration) Set(s string) error {
	err := v.durationValue.Set(s)
	if err == nil {
		*v.given = true
	}
	return err
}

func (v requiredDuration) String() string {
	if v.given == nil || !*v.given {
		return ""
	}
	return v.durationValue.String()
}

// printPruned writes what prune did with each upload, for people.
func printPruned(w io.Writer, r admin.PendingReport, o admin.PendingOptions, now time.Time) {
	where := r.Prefix
	if where == "" {
		where = "the bucket"
	}
	if len(r.Uploads) == 0 {
		fmt.Fprintf(w, "No pending upload under %s.\n", where)
	}
	removed := "Removed"
	if o.DryRun {
		removed = "Would remove (--dry-run)"
	}
	for _, u := range r.Uploads {
		what := "Kept"
		if u.Removed {
			what = removed
		}
		started := ""
		if !u.Initiated.IsZero() {
			started = fmt.Sprintf(", started %s (%s)", report.Ago(now, u.Initiated), report.UTC(u.Initiated))
		}
		fmt.Fprintf(w, "%s %s%s, upload %s: %s\n", what, term.Safe(u.Key), started, term.Safe(u.Upload), term.Safe(u.Why))
	}
	if r.Truncated {
		fmt.Fprintf(w, "The bucket has more uploads than the %d looked at: run prune again once these are gone.\n", len(r.Uploads))
	}
	n := len(r.Removed())
	fmt.Fprintf(w, "%s %d of %d pending uploads under %s (older than %v).\n", removed, n, len(r.Uploads), where, o.OlderThan)
}

// pruneJSON is prune --json's object.
type pruneJSON struct {
	Command   string       `json:"command"`
	Prefix    string       `json:"prefix"`
	OlderThan string       `json:"older_than"`
	DryRun    bool         `json:"dry_run"`
	Uploads   []prunedJSON `json:"uploads"`
	Removed   int          `json:"removed"`
	Truncated bool         `json:"truncated,omitempty"`
	Errors    []string     `json:"errors,omitempty"`
}

// prunedJSON is one upload in prune --json.
type prunedJSON struct {
	Key       string `json:"key"`
	Upload    string `json:"upload"`
	Initiated string `json:"initiated,omitempty"`
	Removed   bool   `json:"removed"`
	Why       string `json:"why"`
	Error     string `json:"error,omitempty"`
}

func pruneJSONOf(r admin.PendingReport, o admin.PendingOptions) pruneJSON {
	j := pruneJSON{Command: "prune", Prefix: r.Prefix, OlderThan: o.OlderThan.String(), DryRun: o.DryRun,
		Uploads: []prunedJSON{}, Removed: len(r.Removed()), Truncated: r.Truncated}
	for _, u := range r.Uploads {
		p := prunedJSON{Key: u.Key, Upload: u.Upload, Removed: u.Removed, Why: u.Why}
		if !u.Initiated.IsZero() {
			p.Initiated = report.UTC(u.Initiated)
		}
		if u.Err != nil {
			p.Error = u.Err.Error()
			j.Errors = append(j.Errors, p.Error)
		}
		j.Uploads = append(j.Uploads, p)
	}
	return j
}
