package admin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/driver"
)

// maxBefore is how many earlier holders a record remembers: far more
// takeovers than fit in the seconds a late write can lag.
const maxBefore = 8

// Era is one holder's epoch and when its lease began on the service's
// clock, at the latest. An older epoch's write the service stamped at or
// after Began is late.
type Era struct {
	Epoch uint64    `json:"epoch"`
	Began time.Time `json:"began"`
}

func (e Era) equal(o Era) bool { return e.Epoch == o.Epoch && e.Began.Equal(o.Began) }

// Era returns the era of r's holder, read in an answer that said svc: its
// Began, or before it has renewed, the object's modification time plus the
// resolution. ok is false when neither is known or r has no epoch.
func (r Record) Era(svc *ServiceClock) (Era, bool) {
	switch {
	case r.Epoch == 0:
		return Era{}, false
	case !r.Began.IsZero():
		return Era{Epoch: r.Epoch, Began: r.Began}, true
	case svc != nil && !svc.Modified.IsZero():
		return Era{Epoch: r.Epoch, Began: svc.Modified.Add(svc.Resolution)}, true
	}
	return Era{}, false
}

// Remembered returns what a new holder's record remembers: prev's era, then
// what prev remembered, at most maxBefore.
func Remembered(prev *Record, svc *ServiceClock) []Era {
	if prev == nil || prev.Epoch == 0 {
		return nil
	}
	var out []Era
	if e, ok := prev.Era(svc); ok {
		out = append(out, e)
	}
	out = append(out, prev.Before...)
	return out[:min(len(out), maxBefore)]
}

// Eras returns the holders the status knows of, newest first; empty without
// a record with an epoch.
func (s Status) Eras() []Era {
	if s.Record == nil {
		return nil
	}
	var out []Era
	if e, ok := s.Record.Era(s.Service); ok {
		out = append(out, e)
	}
	return append(out, s.Record.Before...)
}

// LateBy reports whether an object stamped st, modified at mod on the
// service's clock, was written after a holder of a greater epoch had taken
// the prefix, with the earliest such era and by how much. mod is no earlier
// than the write, Began no earlier than the takeover, so a write reported
// late was late; one within the clock's resolution may pass as in time.
func LateBy(eras []Era, st Stamp, mod time.Time) (after Era, by time.Duration, late bool) {
	for _, e := range eras {
		if e.Epoch > st.Epoch && !mod.Before(e.Began) && (!late || e.Began.Before(after.Began)) {
			after, by, late = e, mod.Sub(e.Began), true
		}
	}
	return after, by, late
}

// LateWrite is an object written after its holder's lease had passed on.
type LateWrite struct {
	Key      string         // relative to the prefix
	Version  driver.Version // the version judged
	Stamp    Stamp          // its writer's epoch and instance
	Modified time.Time      // when the service stamped it
	After    Era            // the holder that had taken the prefix before it
	By       time.Duration
}

// ErrNoEras: the lease object tells no holders' epochs and beginnings (the
// prefix is free, the record has no epoch, or no service time is reported).
var ErrNoEras = errors.New("the lease object tells no epochs and beginnings of holders to judge objects by")

// LateWrites yields the objects under b's prefix written late, by the eras
// of the lease object read first at now. A failure is yielded once, last.
func LateWrites(ctx context.Context, b *bucket.Bucket, now time.Time) iter.Seq2[LateWrite, error] {
	return lateWrites(ctx, b.Driver(), b.Prefix(), now)
}

func lateWrites(ctx context.Context, b driver.Bucket, prefix string, now time.Time) iter.Seq2[LateWrite, error] {
	return func(yield func(LateWrite, error) bool) {
		st, err := inspect(ctx, b, prefix, now)
		if err != nil {
			yield(LateWrite{}, err)
			return
		}
		if len(st.Eras()) == 0 {
			yield(LateWrite{}, fmt.Errorf("late writes under %s: %w", st.Key, ErrNoEras))
			return
		}
		for obj, err := range b.List(ctx, st.under()) {
			if err != nil {
				yield(LateWrite{}, err)
				return
			}
			w, late, err := st.Late(ctx, b, obj)
			if err != nil || late {
				if !yield(w, err) || err != nil {
					return
				}
			}
		}
	}
}

// under is the key prefix of the objects under the lease's prefix.
func (s Status) under() string { return strings.TrimSuffix(s.Key, Key("")) }

// Late judges one object listed in b (the whole bucket or a view of the
// prefix) by its stamp and the status's eras. The lease object, scratch keys
// and unstamped objects are never late. Without listed metadata it reads it
// with a Get; an object deleted since is not late.
func (s Status) Late(ctx context.Context, b driver.Bucket, obj driver.Object) (LateWrite, bool, error) {
	if obj.Key == s.Key || IsScratchKey(obj.Key) {
		return LateWrite{}, false, nil
	}
	md := obj.Metadata
	if md == nil {
		var err error
		if md, err = metadataOf(ctx, b, obj.Key); errors.Is(err, driver.ErrNotExist) {
			return LateWrite{}, false, nil
		} else if err != nil {
			return LateWrite{}, false, err
		}
	}
	w, late := s.late(strings.TrimPrefix(obj.Key, s.under()), obj.Version, md, obj.ModTime)
	return w, late, nil
}

// LateRead judges the version of key a reader read, by the Attrs its Get
// returned.
func (s Status) LateRead(key string, a bucket.Attrs) (LateWrite, bool) {
	if IsScratchKey(key) {
		return LateWrite{}, false
	}
	return s.late(key, a.Version, a.Metadata, a.Modified)
}

// late judges a version of key with metadata md, modified at mod.
func (s Status) late(key string, v driver.Version, md driver.Metadata, mod time.Time) (LateWrite, bool) {
	stamp, ok := StampOf(md)
	if !ok {
		return LateWrite{}, false
	}
	after, by, late := LateBy(s.Eras(), stamp, mod)
	if !late {
		return LateWrite{}, false
	}
	return LateWrite{Key: key, Version: v, Stamp: stamp, Modified: mod, After: after, By: by}, true
}

// metadataOf reads key's metadata with a Get whose body it closes unread.
func metadataOf(ctx context.Context, b driver.Bucket, key string) (driver.Metadata, error) {
	rc, a, err := b.Get(ctx, key, driver.GetOptions{Metadata: true})
	if err != nil {
		return nil, err
	}
	rc.Close()
	return a.Metadata, nil
}

// Stamp metadata keys: lowercase letters, which every service keeps.
const (
	metaEpoch    = "bucketleaseepoch"
	metaInstance = "bucketleaseinstance"
)

// Stamp is the metadata Lease.Bucket writes on every object, in the request
// that makes it visible: the epoch and instance of its lease. An object
// stamped with an epoch older than a lease that had begun before it was
// written is a late write. Only drivers that keep metadata carry it.
type Stamp struct {
	Epoch uint64
	// Instance is the instance id as metadata carries it (StampedInstance).
	Instance string
}

// Metadata returns the stamp as object metadata.
func (s Stamp) Metadata() driver.Metadata {
	return driver.Metadata{metaEpoch: strconv.FormatUint(s.Epoch, 10), metaInstance: s.Instance}
}

// StampOf reads a stamp from metadata; ok is false without one (or without
// an epoch in range): such an object is neither late nor in time.
func StampOf(md driver.Metadata) (s Stamp, ok bool) {
	e, err := strconv.ParseUint(md[metaEpoch], 10, 64)
	if err != nil || e == 0 || e > MaxEpoch {
		return Stamp{}, false
	}
	return Stamp{Epoch: e, Instance: md[metaInstance]}, true
}

// StampedInstance returns id as a Stamp carries it: unchanged if valid
// metadata, percent-escaped if that fits, else "sha256:" and 32 hex digits.
func StampedInstance(id string) string {
	if (driver.Metadata{metaInstance: id}).Validate() == nil {
		return id
	}
	if esc := url.PathEscape(id); (driver.Metadata{metaInstance: esc}).Validate() == nil {
		return esc
	}
	sum := sha256.Sum256([]byte(id))
	return "sha256:" + hex.EncodeToString(sum[:16])
}
