package admin

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"time"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/driver"
)

// maxBefore is how many earlier holders a record remembers (Record.Before):
// far more takeovers than fit in the few seconds a late write comes after
// its writer's lease has passed on.
const maxBefore = 8

// Era is one holder's lease as a record remembers it: its epoch, and when
// it began on the service's clock at the latest. A write of an older epoch
// that the service stamped at or after Began was made when this holder
// already held the prefix: a late write.
type Era struct {
	Epoch uint64    `json:"epoch"`
	Began time.Time `json:"began"`
}

func (e Era) equal(o Era) bool { return e.Epoch == o.Epoch && e.Began.Equal(o.Began) }

// Era returns the era of the holder of r, read in an answer that said
// svc about the service's clock: its Began, or, while it has not renewed
// (or where it writes none), the lease object's modification time plus
// the resolution, which is no earlier than the write that took the
// prefix. ok is false when neither is known, or rec has no epoch.
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

// Remembered returns what a new holder's record remembers of the holders up
// to prev, read in an answer that said svc: prev's era, then what prev
// remembered, at most maxBefore in all.
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

// Eras returns the holders the status knows of, newest first: the
// current record's, and those it remembers (Record.Before). It is empty
// for a free prefix, an object that is not a record, and a record without
// an epoch.
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

// LateBy reports whether an object stamped st, last modified at mod on
// the service's clock (its Last-Modified, a listing's ModTime), was
// written late: when a holder of a greater epoch had already taken the
// prefix, by the eras known (Status.Eras). It returns the earliest such
// holder's era and how long after it began the object was written, at
// the least. The service stamps mod no earlier than the write reached it,
// and Began is no earlier than the holder took the prefix, so a write
// reported late was late; one written in the resolution of the service's
// clock after a takeover may be reported in time.
func LateBy(eras []Era, st Stamp, mod time.Time) (after Era, by time.Duration, late bool) {
	for _, e := range eras {
		if e.Epoch > st.Epoch && !mod.Before(e.Began) && (!late || e.Began.Before(after.Began)) {
			after, by, late = e, mod.Sub(e.Began), true
		}
	}
	return after, by, late
}

// LateWrite is an object written late: by a holder whose lease had
// already passed to another.
type LateWrite struct {
	Key      string         // relative to the prefix
	Version  driver.Version // the version judged
	Stamp    Stamp          // its writer's epoch and instance
	Modified time.Time      // when the service stamped it
	After    Era            // the holder that had taken the prefix before it
	By       time.Duration
}

// ErrNoEras is returned by LateWrites when the lease object says nothing
// about its holders' epochs and beginnings: the prefix is free, or its
// record has no epoch, or the driver reports no service time.
var ErrNoEras = errors.New("the lease object tells no epochs and beginnings of holders to judge objects by")

// LateWrites lists the objects under b's prefix and yields those written
// late (Status.Late), judged by the eras of the lease object read first,
// at the reader's wall-clock time now. A failure is yielded once, last, as
// a Bucket's List does; with no eras to judge by, the error wraps ErrNoEras.
func LateWrites(ctx context.Context, b *bucket.Bucket, now time.Time) iter.Seq2[LateWrite, error] {
	return lateWrites(ctx, b.Driver(), b.Prefix(), now)
}

// lateWrites is LateWrites on prefix in b.
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

// Late judges one object listed under the status's prefix (its key in
// b, which may be the whole bucket or a view of the prefix such as
// Lease.Bucket; its modification time on the service's clock): whether its
// stamp (StampOf) shows it written late, by the eras the status knows
// (LateBy). The lease object, scratch keys and objects without a stamp
// are never late. Where the listing carried no metadata (S3 and its kind
// list none), the object's is read with a Get whose body is closed unread;
// an object deleted since it was listed is not late.
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
	stamp, ok := StampOf(md)
	if !ok {
		return LateWrite{}, false, nil
	}
	after, by, late := LateBy(s.Eras(), stamp, obj.ModTime)
	if !late {
		return LateWrite{}, false, nil
	}
	return LateWrite{Key: strings.TrimPrefix(obj.Key, s.under()), Version: obj.Version, Stamp: stamp, Modified: obj.ModTime, After: after, By: by}, true, nil
}

// LateRead judges the version of key that a reader read, by the Attrs its
// Get or ReadAll returned (that version's metadata and modification time):
// whether it was written late, by the eras the status knows (LateBy). A
// scratch key and a version without a stamp are never late.
func (s Status) LateRead(key string, a bucket.Attrs) (LateWrite, bool) {
	if IsScratchKey(key) {
		return LateWrite{}, false
	}
	stamp, ok := StampOf(a.Metadata)
	if !ok {
		return LateWrite{}, false
	}
	after, by, late := LateBy(s.Eras(), stamp, a.Modified)
	if !late {
		return LateWrite{}, false
	}
	return LateWrite{Key: key, Version: a.Version, Stamp: stamp, Modified: a.Modified, After: after, By: by}, true
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
