package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// cleanupTimeout bounds a clean-up, which runs on a context of its own.
const cleanupTimeout = 10 * time.Second

// cleanUp leaves the prefix safe after an acquire that wrote and then found
// a precondition not applied, and returns failure with what it left. Its
// first write may then have gone over a live holder, who may write until its
// fence; so it does not release our record (which would let a third instance
// in) but restamps it to block the prefix for a full TTL (the longer of ours
// and the record read before), and checkBlocked keeps this contender out
// too. Anyone else's record is left alone.
func (a *attempt) cleanUp(ctx context.Context, st stamp, failure error) error {
	a.cleaned = true
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	cur, v, err := a.read(ctx)
	switch {
	case errors.Is(err, driver.ErrNotExist):
		return failure
	case err == nil && (cur.Err != nil || !a.c.owns(cur.Record)):
		return failure // not ours: nothing of ours is left
	case err == nil:
		block := cur.Record
		block.RenewedAt = a.c.stamps.renewed(a.c.s.clock.Wall())
		block.TTLSeconds = int64(a.blockTTL(st) / time.Second)
		// Not remembered as sent: it is no lease of ours to take back.
		a.c.blocked = block
		if _, err = a.pace.put(ctx, a.b, a.c.key, block.Encode(), driver.IfMatch(v), 0); err == nil {
			return fmt.Errorf("%w; %s, so the lease object was left blocked: it holds a record of instance %s, fresh until %s (ttl %ds), "+
				"so that nobody takes the prefix before a holder it may have overwritten has fenced itself. Fix the path to the service; after %s, acquire again (or break the lease, once you know that nobody else writes to the prefix)",
				failure, a.overwrote(st), block.InstanceID, block.RenewedAt.Add(block.TTL()).Format(time.RFC3339), block.TTLSeconds,
				block.RenewedAt.Add(block.TTL()).Format(time.RFC3339))
		}
	}
	left := st.rec.RenewedAt.Add(st.rec.TTL())
	return fmt.Errorf("%w; %s, and the clean-up failed, so a lease record naming instance %s may be left at %s, "+
		"fresh until %s: %w", failure, a.overwrote(st), a.c.s.id, a.c.key, left.Format(time.RFC3339), err)
}

// blockTTL is how long cleanUp blocks the prefix.
func (a *attempt) blockTTL(st stamp) time.Duration {
	d := a.c.s.ttl
	if st.seen != nil && st.seen.TTL() > d {
		d = min(st.seen.TTL(), admin.MaxSaneTTL)
	}
	return d
}

// overwrote says what the attempt's first write may have gone over.
func (a *attempt) overwrote(st stamp) string {
	r := st.seen
	switch {
	case r == nil:
		return "this acquire's first write may have gone over a lease another instance created in the same instant (the key was free when read)"
	case r.TTLSeconds == 0:
		return fmt.Sprintf("this acquire's first write went over the released lease of instance %s, or over a newer record written in the same instant", r.InstanceID)
	default:
		return fmt.Sprintf("this acquire's first write went over the lease of instance %s (renewed %s, ttl %ds), or over a newer record written in the same instant",
			r.InstanceID, r.RenewedAt.Format(time.RFC3339), r.TTLSeconds)
	}
}

// checkBlocked refuses an acquire while cleanUp's record blocks the prefix.
func (c *Contender) checkBlocked() error {
	if c.blocked.InstanceID == "" {
		return nil
	}
	until := c.blocked.RenewedAt.Add(c.blocked.TTL())
	if !c.s.clock.Wall().Before(until) {
		c.blocked = admin.Record{}
		return nil
	}
	return fmt.Errorf("acquire %s: %w: an earlier acquire of this contender failed on a path that did not apply a precondition, and left the prefix blocked until %s; nothing was sent",
		c.key, ErrPreconditionsIgnored, until.Format(time.RFC3339))
}
