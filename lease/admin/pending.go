package admin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/multipart"
)

// PendingOptions say which pending uploads RemovePending removes.
type PendingOptions struct {
	// OlderThan is how long ago, at least, an upload must have been
	// started (on the service's clock where the driver reports it) to be
	// removed. Zero means any age; negative is an error.
	OlderThan time.Duration
	// DryRun reports what would be removed, and removes nothing.
	DryRun bool
	// Now is the time to judge by; the zero time means time.Now().
	Now time.Time
	// Timeout, if positive, bounds the listing and each abort; the
	// lease reads are bounded by the bucket's own (a caller wraps it).
	Timeout time.Duration
}

// PendingOutcome is what RemovePending did with one pending upload.
type PendingOutcome struct {
	multipart.Pending
	// Removed reports that it was aborted (or, under DryRun, would be).
	Removed bool
	// Why says why it was removed or kept, for people.
	Why string
	// Err is why its abort failed, naming the key and the upload; nil if
	// it was removed, or kept by the rule.
	Err error
}

// PendingReport is what RemovePending found under a prefix and did.
type PendingReport struct {
	// Prefix is the key prefix listed: the lease's prefix and a slash, or
	// "" for the whole bucket.
	Prefix string
	// Uploads are the pending uploads found, in the service's order.
	Uploads []PendingOutcome
	// Truncated reports that the service has more uploads than were
	// looked at (maxPendingScanned); run it again once these are gone.
	Truncated bool
}

// Removed returns the uploads that were removed (or, under DryRun, would
// be).
func (r PendingReport) Removed() []multipart.Pending {
	var out []multipart.Pending
	for _, u := range r.Uploads {
		if u.Removed {
			out = append(out, u.Pending)
		}
	}
	return out
}

// maxPendingScanned bounds how many of a bucket's uploads RemovePending
// looks at.
const maxPendingScanned = 10_000

// RemovePending aborts the pending uploads under b's prefix (streamed
// writes started and neither committed nor aborted: S3 multipart uploads,
// the file driver's staged files) that a dead or fenced writer left, and
// returns what it found and did with each. It removes an upload only if
// every rule holds:
//
//   - it was started at least o.OlderThan ago; an upload whose start the
//     service does not give is kept;
//   - no live holder may still commit it: for the lease of every prefix
//     that contains its key (the prefix's own, a nested prefix's, an
//     enclosing one's), the lease is Free, Released or Stale (its holder
//     has stopped renewing, so its fence has closed every write it
//     started, for good), or it is Fresh and the upload was started more
//     than one TTL before the current holder's lease began (Record.Began,
//     or AcquiredAt before the first renewal): an earlier holder's, whose
//     fence closed it before the current one took over. An upload a
//     Fresh holder started since, of any age, every upload under a fresh
//     record of Break (the broken holder may write until it goes stale),
//     and any upload under a Suspect lease object are kept;
//   - the driver can abort it (Pending.Abort); the file driver refuses a
//     staged file whose process still runs, and such a file is kept.
//
// The uploads are listed before any lease is read, so that a holder that
// takes a lease after it was read started nothing that was listed. A
// writer that writes under the prefix without taking the lease is judged
// by age alone. The error joins every failure (the listing, a lease that
// could not be read, an abort), each naming its key; the report holds
// what was done all the same. Without a multipart.PendingLister the error
// wraps driver.ErrUnsupported. b is the bucket as opened, not a Lease's
// Bucket.
func RemovePending(ctx context.Context, b *bucket.Bucket, o PendingOptions) (PendingReport, error) {
	return removePending(ctx, b.Driver(), b.Prefix(), o)
}

// removePending is RemovePending under prefix in b.
func removePending(ctx context.Context, b driver.Bucket, prefix string, o PendingOptions) (PendingReport, error) {
	prefix = strings.Trim(prefix, "/")
	r := PendingReport{Prefix: prefix}
	if prefix != "" {
		r.Prefix += "/"
	}
	if o.OlderThan < 0 {
		return r, fmt.Errorf("remove pending uploads under %q: OlderThan %v is negative", r.Prefix, o.OlderThan)
	}
	pl, ok := b.(multipart.PendingLister)
	if !ok {
		return r, fmt.Errorf("remove pending uploads under %q: %w: the driver cannot list pending uploads", r.Prefix, driver.ErrUnsupported)
	}
	lctx, cancel := bounded(ctx, o.Timeout)
	uploads, truncated, err := listUnder(lctx, pl, r.Prefix)
	cancel()
	r.Truncated = truncated
	if err != nil {
		return r, fmt.Errorf("remove pending uploads under %q: listing them: %w", r.Prefix, err)
	}
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	j := &pendingJudge{b: b, now: now, leases: map[string]leaseVerdict{}}
	var errs []error
	for _, u := range uploads {
		out := j.judge(ctx, u, o.OlderThan)
		if out.Removed && !o.DryRun {
			actx, cancel := bounded(ctx, o.Timeout)
			out.remove(actx)
			cancel()
		}
		if out.Err != nil {
			errs = append(errs, out.Err)
		}
		r.Uploads = append(r.Uploads, out)
	}
	return r, errors.Join(errs...)
}

// remove aborts the upload judged removable, and records the outcome: a
// refusal of the driver's (ErrPrecondition: the file driver's writer still
// runs) keeps it, any other failure is Err.
func (out *PendingOutcome) remove(ctx context.Context) {
	err := out.Abort(ctx)
	switch {
	case err == nil:
		return
	case errors.Is(err, driver.ErrPrecondition):
		out.Removed, out.Why = false, "kept: "+err.Error()
	default:
		out.Removed, out.Why, out.Err = false, "the abort failed", err
	}
}

// listUnder lists the uploads pending under under. Some services match a
// prefix against whole keys only (MinIO lists an object's uploads for its
// exact name and none for a "directory"), so when that finds none it looks
// at the bucket's uploads, at most maxPendingScanned of them, and keeps
// those under the prefix.
func listUnder(ctx context.Context, pl multipart.PendingLister, under string) ([]multipart.Pending, bool, error) {
	uploads, truncated, err := scanPending(ctx, pl, under, under)
	if err == nil && len(uploads) == 0 && under != "" {
		return scanPending(ctx, pl, "", under)
	}
	return uploads, truncated, err
}

// scanPending lists the uploads whose key starts with listPrefix, at most
// maxPendingScanned of them, and keeps those under under.
func scanPending(ctx context.Context, pl multipart.PendingLister, listPrefix, under string) ([]multipart.Pending, bool, error) {
	var out []multipart.Pending
	seen := 0
	for u, err := range pl.ListPending(ctx, listPrefix) {
		if err != nil {
			return out, false, err
		}
		if seen == maxPendingScanned {
			return out, true, nil
		}
		seen++
		if strings.HasPrefix(u.Key, under) {
			out = append(out, u)
		}
	}
	return out, false, nil
}

// bounded returns ctx bounded by d, or ctx itself where d is not positive.
func bounded(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d)
}
