package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/term"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/file"
	"github.com/mushroomdb/bucketlease/driver/multipart"
	"github.com/mushroomdb/bucketlease/internal/location"
)

// maxPendingShown bounds how many pending uploads show lists.
const maxPendingShown = 100

// pendingUploads is what show found pending under the prefix: uploads
// started and neither completed nor aborted (S3 multipart uploads), which
// the service keeps, and bills, until something aborts them.
type pendingUploads struct {
	available bool   // the driver can list them (multipart.PendingLister)
	under     string // the key prefix listed
	uploads   []multipart.Pending
	truncated bool // more than maxPendingShown, or more than maxPendingScanned looked at
	err       error
}

// listPending lists the uploads pending under prefix through b, if its
// driver can (multipart.PendingLister), within timeout. b is nil when the
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
	pl, ok := b.(multipart.PendingLister)
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
func fileStaged(ctx context.Context, loc *location.Location, timeout time.Duration) pendingUploads {
	if !file.Opened(fileDir(loc)) {
		return pendingUploads{available: true}
	}
	b, err := openLocation(ctx, loc)
	if err != nil {
		return pendingUploads{available: true, err: err}
	}
	prefix := loc.Prefix
	defer location.Close(b)
	return listPending(ctx, b, prefix, timeout)
}

// maxPendingScanned bounds how many of a bucket's uploads show looks at
// for those under its prefix.
const maxPendingScanned = 10_000

// scan lists the pending uploads whose key starts with listPrefix, looking
// at most at limit of them, and keeps those under p.under.
func (p *pendingUploads) scan(ctx context.Context, pl multipart.PendingLister, listPrefix string, limit int) {
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
func (p pendingUploads) rows(loc *location.Location, row func(k, v string)) {
	where := p.under
	if where == "" {
		where = "the bucket"
	}
	switch {
	case !p.available:
		row("pending", fmt.Sprintf("not available on this driver (%s)", loc.Scheme))
	case p.err != nil:
		row("pending", fmt.Sprintf("could not list the uploads pending under %s: %s", where, term.OneLine(p.err.Error())))
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
		why := "a put still running, or one cut off: the service keeps its parts until they are aborted; bucketlease prune removes those no live holder may still commit"
		if loc.Scheme == "file" {
			why = "a put still running, or one killed: the next write, or bucketlease prune, removes those whose writer is gone"
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
