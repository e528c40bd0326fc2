package report

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/term"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/multipart"
	"github.com/mushroomdb/bucketlease/internal/location"
)

// maxPendingShown bounds how many pending uploads show lists.
const maxPendingShown = 100

// Pending is what show found pending under the prefix: uploads
// started and neither completed nor aborted (S3 multipart uploads), which
// the service keeps, and bills, until something aborts them.
type Pending struct {
	Available bool   // the driver can list them (multipart.PendingLister)
	Under     string // the key prefix listed
	Uploads   []multipart.Pending
	Truncated bool // more than maxPendingShown, or more than maxPendingScanned looked at
	Err       error
}

// ListPending lists the uploads pending under prefix through b, if its
// driver can (multipart.PendingLister), within timeout. b is nil when the
// driver was not opened.
//
// It asks for the uploads under the prefix first. Some services match that
// prefix against whole keys only (MinIO lists an object's uploads for its
// exact name and none for a "directory"), so when that finds none it looks
// at the bucket's uploads, at most maxPendingScanned of them, and keeps
// those under the prefix.
func ListPending(ctx context.Context, b driver.Bucket, prefix string, timeout time.Duration) Pending {
	p := Pending{Under: strings.TrimPrefix(prefix+"/", "/")}
	pl, ok := b.(multipart.PendingLister)
	if b == nil || !ok {
		return p
	}
	p.Available = true
	c, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if p.scan(c, pl, p.Under, maxPendingShown+1); p.Err == nil && p.Available && len(p.Uploads) == 0 && p.Under != "" {
		p.scan(c, pl, "", maxPendingScanned)
	}
	if errors.Is(p.Err, context.DeadlineExceeded) && ctx.Err() == nil {
		p.Err = fmt.Errorf("no answer within %v (--timeout): %w", timeout, p.Err)
	}
	return p
}

// maxPendingScanned bounds how many of a bucket's uploads show looks at
// for those under its prefix.
const maxPendingScanned = 10_000

// scan lists the pending uploads whose key starts with listPrefix, looking
// at most at limit of them, and keeps those under p.Under.
func (p *Pending) scan(ctx context.Context, pl multipart.PendingLister, listPrefix string, limit int) {
	seen := 0
	for u, err := range pl.ListPending(ctx, listPrefix) {
		switch {
		case errors.Is(err, driver.ErrUnsupported):
			p.Available = false
			return
		case err != nil:
			p.Err = err
			return
		case seen == limit:
			p.Truncated = true
			return
		}
		seen++
		if !strings.HasPrefix(u.Key, p.Under) {
			continue
		}
		if len(p.Uploads) == maxPendingShown {
			p.Truncated = true
			return
		}
		p.Uploads = append(p.Uploads, u)
	}
}

// PendingJSON is show --json's "pending".
type PendingJSON struct {
	// Available is false when the driver cannot list pending uploads.
	Available bool                `json:"available"`
	Prefix    string              `json:"prefix"`
	Uploads   []PendingUploadJSON `json:"uploads"`
	Truncated bool                `json:"truncated,omitempty"`
	Error     string              `json:"error,omitempty"`
}

type PendingUploadJSON struct {
	Key       string `json:"key"`
	Upload    string `json:"upload"`
	Initiated string `json:"initiated,omitempty"`
}

func (p Pending) JSON() *PendingJSON {
	j := &PendingJSON{Available: p.Available, Prefix: p.Under, Uploads: []PendingUploadJSON{}, Truncated: p.Truncated}
	if p.Err != nil {
		j.Error = p.Err.Error()
	}
	for _, u := range p.Uploads {
		uj := PendingUploadJSON{Key: u.Key, Upload: u.Upload}
		if !u.Initiated.IsZero() {
			uj.Initiated = UTC(u.Initiated)
		}
		j.Uploads = append(j.Uploads, uj)
	}
	return j
}

// rows writes the pending uploads for people, as rows of printStatus.
func (p Pending) Rows(loc *location.Location, row func(k, v string)) {
	where := p.Under
	if where == "" {
		where = "the bucket"
	}
	switch {
	case !p.Available:
		row("pending", fmt.Sprintf("not available on this driver (%s)", loc.Scheme))
	case p.Err != nil:
		row("pending", fmt.Sprintf("could not list the uploads pending under %s: %s", where, term.OneLine(p.Err.Error())))
	case len(p.Uploads) == 0 && p.Truncated:
		row("pending", fmt.Sprintf("none under %s among the first %d uploads of the bucket (it has more)", where, maxPendingScanned))
	case len(p.Uploads) == 0:
		row("pending", fmt.Sprintf("none: no upload under %s was started and left uncompleted", where))
	default:
		n := fmt.Sprintf("%d uploads", len(p.Uploads))
		switch {
		case p.Truncated && len(p.Uploads) == maxPendingShown:
			n = fmt.Sprintf("more than %d uploads (the first %d shown)", maxPendingShown, maxPendingShown)
		case p.Truncated:
			n = fmt.Sprintf("%d uploads (among the first %d of the bucket; it has more)", len(p.Uploads), maxPendingScanned)
		case len(p.Uploads) == 1:
			n = "1 upload"
		}
		why := "a put still running, or one cut off: the service keeps its parts until they are aborted; bucketlease prune removes those no live holder may still commit"
		if loc.Scheme == "file" {
			why = "a put still running, or one killed: the next write, or bucketlease prune, removes those whose writer is gone"
		}
		row("pending", fmt.Sprintf("%s under %s started and neither completed nor aborted (%s)", n, where, why))
		now := time.Now()
		for _, u := range p.Uploads {
			started := ""
			if !u.Initiated.IsZero() {
				started = fmt.Sprintf(", started %s (%s)", Ago(now, u.Initiated), UTC(u.Initiated))
			}
			row("", fmt.Sprintf("%s%s, upload %s", u.Key, started, u.Upload))
		}
	}
}
