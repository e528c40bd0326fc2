package admin

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/multipart"
)

// pendingJudge applies RemovePending's rule, reading each lease once.
type pendingJudge struct {
	b      driver.Bucket
	now    time.Time
	leases map[string]leaseVerdict
	// svc is the first service clock a read reported, to age uploads by.
	svc *ServiceClock
}

// leaseVerdict is what Inspect said of one prefix's lease.
type leaseVerdict struct {
	st  Status
	err error
}

// lease inspects prefix's lease, once.
func (j *pendingJudge) lease(ctx context.Context, prefix string) leaseVerdict {
	if v, ok := j.leases[prefix]; ok {
		return v
	}
	st, err := inspect(ctx, j.b, prefix, j.now)
	if err == nil && j.svc == nil {
		j.svc = st.Service
	}
	v := leaseVerdict{st: st, err: err}
	j.leases[prefix] = v
	return v
}

func (j *pendingJudge) judge(ctx context.Context, u multipart.Pending, olderThan time.Duration) PendingOutcome {
	out := PendingOutcome{Pending: u}
	var free []string
	held := ""
	for _, p := range enclosing(u.Key) {
		v := j.lease(ctx, p)
		if v.err != nil {
			out.Why, out.Err = "kept: its lease could not be read", fmt.Errorf("upload %s of %q kept: %w", u.Upload, u.Key, v.err)
			return out
		}
		may, why := mayRemove(v.st, u)
		if !may {
			held = why
			break
		}
		if v.st.State != Free {
			free = append(free, why)
		}
	}
	if len(free) == 0 {
		free = append(free, "no lease covers its key")
	}
	if u.Initiated.IsZero() {
		out.Why = "kept: the service does not say when it was started, so its age is unknown"
		return out
	}
	now := j.now
	if j.svc != nil {
		now = now.Add(-j.svc.Offset) // the service's clock, as Initiated is
	}
	age := max(now.Sub(u.Initiated), 0) // a start a moment ahead is the clocks' resolution
	switch {
	case olderThan > 0 && age < olderThan:
		out.Why = fmt.Sprintf("kept: started %v ago, less than %v", age.Round(time.Second), olderThan)
	case held != "":
		out.Why = "kept: " + held
	case u.Abort == nil:
		out.Why = "kept: the driver has no call that aborts it"
	default:
		out.Removed = true
		out.Why = fmt.Sprintf("started %v ago; %s", age.Round(time.Second), strings.Join(free, "; "))
	}
	return out
}

// mayRemove reports whether st leaves no live holder that may still commit
// u, and why.
func mayRemove(st Status, u multipart.Pending) (bool, string) {
	switch st.State {
	case Free:
		return true, "no lease at " + st.Key
	case Released:
		return true, st.Key + " is released"
	case Stale:
		return true, st.Key + " is stale: its holder stopped renewing, and its fence has closed every write it started"
	case Fresh:
		if st.Record == nil {
			break
		}
		if st.Record.InstanceID == BreakerID {
			// A fresh break record: the broken holder may write until it goes
			// stale, and AcquiredAt is the break's.
			// A fresh break record: the broken holder may write until its
			// fence, before the record goes stale, and the record's
			// AcquiredAt is the break's, not that holder's.
			return false, fmt.Sprintf("%s was broken by an operator and stays fresh until %s: the broken holder may still commit it until then",
				st.Key, st.TakeoverAt.UTC().Format(time.RFC3339))
		}
		began, ttl := st.Record.Began, st.Record.TTL()
		if began.IsZero() {
			began = st.Record.AcquiredAt
		}
		if !u.Initiated.IsZero() && u.Initiated.Add(ttl).Before(began) {
			return true, fmt.Sprintf("it was started more than a TTL (%v) before the lease of %s's live holder %q began (%s): an earlier holder's, fenced before this one took over",
				ttl, st.Key, st.Record.InstanceID, began.UTC().Format(time.RFC3339))
		}
		return false, fmt.Sprintf("%s is held by %q (fresh, its lease began %s), which may still commit it",
			st.Key, st.Record.InstanceID, began.UTC().Format(time.RFC3339))
	}
	return false, fmt.Sprintf("%s is %s (%s): whether a live holder may still commit it cannot be told", st.Key, st.State, st.Reason)
}

// enclosing returns the prefixes whose lease covers key, outermost first.
func enclosing(key string) []string {
	out := []string{""}
	for i := range len(key) {
		if key[i] == '/' {
			out = append(out, key[:i])
		}
	}
	return out
}
