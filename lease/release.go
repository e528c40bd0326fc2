package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mushroomdb/bucketlease/clock"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// Release stops all writing under the lease, waits within ctx for its turn
// and for every cancelled write through Bucket to return (one may still
// land; a successor must not start before), then marks the lease released
// so another instance may take it at once. If ctx ends first it returns
// ErrWritesInFlight and marks nothing released.
//
// It writes a released record (ttl_s 0) with If-Match on our last version,
// which the acquire probe proved applied, and never deletes (many S3
// services ignore conditions on DELETE): a record this lease did not write is
// left alone. It returns an error only when a record of ours may remain.
func (l *Lease) Release(ctx context.Context) error {
	l.end(ErrReleased, nil, "")
	if err := l.take(ctx); err != nil {
		return fmt.Errorf("release %s: waiting for a renewal in flight: %w", l.key, err)
	}
	defer l.give()
	l.mu.Lock()
	done, v, rec := l.done, l.version, l.rec
	l.mu.Unlock()
	if err := l.waitWrites(ctx); err != nil {
		if errors.Is(done, ErrLost) {
			return fmt.Errorf("release %s: %w", l.key, err)
		}
		err = fmt.Errorf("release %s: not marked released: %w; the record stays until it goes stale at %s, or until Release is called again",
			l.key, err, rec.RenewedAt.Add(rec.TTL()).Format(time.RFC3339))
		l.emit(Event{Kind: EventReleaseFailed, Key: l.key, InstanceID: l.s.id, Version: v, Time: l.s.clock.Wall(), Err: err,
			Detail: "writes under the lease still in flight; a record of ours is left until it goes stale"})
		return err
	}
	if errors.Is(done, ErrLost) {
		return nil
	}
	if rec.Began.IsZero() {
		rec.Began = l.began // a lease released before its first renewal
	}
	left, err := release(ctx, l.b, l.pace, l.key, v, rec, &l.sent, l.stamps, l.s.clock.Wall())
	ev := Event{Kind: EventReleased, Key: l.key, InstanceID: l.s.id, Version: v, Time: l.s.clock.Wall(),
		Detail: "marked the lease object released (ttl_s 0); anyone may take it at once"}
	if left != "" {
		ev.Detail = "nothing to release: " + left
	}
	if err != nil {
		err = fmt.Errorf("release %s: %w", l.key, err)
		ev.Kind, ev.Err, ev.Detail = EventReleaseFailed, err, "a record of ours may be left until it goes stale"
	}
	l.emit(ev)
	return err
}

// release marks our record at v released with If-Match, releasing in turn a
// later record of ours it reads back. It returns why nothing was written, or
// "" once released.
func release(ctx context.Context, b driver.Bucket, p *pacer, key string, v driver.Version, rec admin.Record, sent *sentRecords, st *stamps, now time.Time) (left string, err error) {
	for range 3 {
		rel := rec
		rel.RenewedAt, rel.TTLSeconds = st.renewed(now), 0
		sent.add(rel)
		_, err = p.put(ctx, b, key, rel.Encode(), driver.IfMatch(v), 0)
		if err == nil {
			return "", nil
		}
		cur, curV, rerr := admin.Read(ctx, clock.System{}, b, key)
		switch {
		case errors.Is(rerr, driver.ErrNotExist):
			return "the lease object is gone", nil
		case rerr != nil:
			return "", fmt.Errorf("%w (and reading it back failed: %v)", err, rerr)
		case cur.Err != nil:
			return "the lease object is not a lease record; left alone", nil
		case !sent.has(cur.Record):
			return fmt.Sprintf("the lease object now holds a record of instance %s that this lease did not write; left alone", cur.Record.InstanceID), nil
		case cur.Record.TTLSeconds == 0:
			return "", nil // our released record landed; its reply was lost
		}
		v, rec = curV, cur.Record // ours and still live: release that version
	}
	return "", fmt.Errorf("the lease object could not be marked released: %w", err)
}
