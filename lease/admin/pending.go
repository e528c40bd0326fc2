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
	// OlderThan is the least age (on the service's clock where reported)
	// of an upload to remove; zero means any age, negative is an error.
	OlderThan time.Duration
	// DryRun reports what would be removed, and removes nothing.
	DryRun bool
	// Now is the time to judge by; the zero time means time.Now().
	Now time.Time
	// Timeout, if positive, bounds the listing and each abort.
	Timeout time.Duration
}

// PendingOutcome is what RemovePending did with one pending upload.
type PendingOutcome struct {
	multipart.Pending
	// Removed: aborted (or, under DryRun, would be).
	Removed bool
	// Why says why it was removed or kept, for people.
	Why string
	// Err is why its abort failed; nil if removed or kept by the rule.
	Err error
}

// PendingReport is what RemovePending found under a prefix and did.
type PendingReport struct {
	// Prefix is the key prefix listed: the lease's prefix and a slash, or "".
	Prefix string
	// Uploads are the pending uploads found, in the service's order.
	Uploads []PendingOutcome
	// Truncated: more uploads than maxPendingScanned; run it again.
	Truncated bool
}

// Removed returns the uploads removed (or, under DryRun, that would be).
func (r PendingReport) Removed() []multipart.Pending {
	var out []multipart.Pending
	for _, u := range r.Uploads {
		if u.Removed {
			out = append(out, u.Pending)
		}
	}
	return out
}

// maxPendingScanned bounds the uploads RemovePending looks at.
const maxPendingScanned = 10_000

// RemovePending aborts the pending uploads under b's prefix (streamed writes
// neither committed nor aborted) that dead or fenced writers left: those
// started at least o.OlderThan ago (by the service), that the driver can
// abort, and under no lease whose holder may still commit them (every
// enclosing prefix's lease Free, Released or Stale, or Fresh with the upload
// started over a TTL before the holder's lease began; never under a Suspect
// object or a fresh break). Uploads are listed before leases are read, so a
// later holder started none of them. The error joins every failure. b is the
// bucket as opened, not a Lease's Bucket.
func RemovePending(ctx context.Context, b *bucket.Bucket, o PendingOptions) (PendingReport, error) {
	return removePending(ctx, b.Driver(), b.Prefix(), o)
}

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

// remove aborts a removable upload; a refusal (ErrPrecondition: the file
// driver's writer still runs) keeps it.
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

// listUnder lists the uploads under under; where a service matches whole
// keys only (MinIO) and finds none, it scans the bucket's uploads instead.
func listUnder(ctx context.Context, pl multipart.PendingLister, under string) ([]multipart.Pending, bool, error) {
	uploads, truncated, err := scanPending(ctx, pl, under, under)
	if err == nil && len(uploads) == 0 && under != "" {
		return scanPending(ctx, pl, "", under)
	}
	return uploads, truncated, err
}

// scanPending lists up to maxPendingScanned uploads from listPrefix and
// keeps those under under.
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

func bounded(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d)
}
