package bounded

import (
	"context"
	"iter"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/mem"
	"github.com/mushroomdb/bucketlease/driver/multipart"
	"github.com/mushroomdb/bucketlease/internal/location"
)

// closingBucket is a driver's bucket that holds a client: Close counts.
type closingBucket struct {
	*mem.Bucket
	closed *int
}

func (c closingBucket) Close() error { *c.closed++; return nil }

// listingBucket is a closingBucket that lists pending uploads: one, named
// after the prefix it was asked for.
type listingBucket struct{ closingBucket }

func (listingBucket) ListPending(_ context.Context, prefix string) iter.Seq2[multipart.Pending, error] {
	return func(yield func(multipart.Pending, error) bool) {
		yield(multipart.Pending{Key: prefix + "k", Upload: "u1"}, nil)
	}
}

// TestDeadlinesKeepAbilities: the bounded bucket of hold, put, show, break,
// list and probe lists pending uploads exactly where the driver's bucket
// does, through the driver's ListPending, and its Close closes the
// driver's bucket.
func TestDeadlinesKeepAbilities(t *testing.T) {
	loc := parse(t, "mem://abilities/p")
	for _, pending := range []bool{false, true} {
		closed := 0
		var in driver.Bucket = closingBucket{Bucket: mem.New(), closed: &closed}
		if pending {
			in = listingBucket{closingBucket{Bucket: mem.New(), closed: &closed}}
		}
		b := New(in, time.Minute, loc, "--timeout")
		pl, ok := b.(multipart.PendingLister)
		if ok != pending {
			t.Errorf("over a driver that lists pending uploads (%v): the bounded bucket is a PendingLister: %v", pending, ok)
		}
		if ok {
			var got []string
			for p, err := range pl.ListPending(t.Context(), "db1/") {
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, p.Key+" "+p.Upload)
			}
			if len(got) != 1 || got[0] != "db1/k u1" {
				t.Errorf("ListPending through the bounded bucket: %q, want the driver's [db1/k u1]", got)
			}
		}
		if err := location.Close(b); err != nil || closed != 1 {
			t.Errorf("closing the bounded bucket: %v, and the driver's was closed %d times; want once", err, closed)
		}
	}
}

// TestDeadlinesPassTheServiceTimeOn: the driver's report of the service's
// time (driver.Attrs.Time) reaches the caller through the bounded bucket,
// for a Put and a Get, and for a Get of a missing key, whose request
// contexts it derives.
func TestDeadlinesPassTheServiceTimeOn(t *testing.T) {
	loc := parse(t, "mem://servicetime/p")
	date := time.Date(2026, 12, 4, 21, 0, 0, 0, time.UTC)
	b := New(&mem.Bucket{Now: func() time.Time { return date }}, time.Minute, loc, "--timeout")
	put, err := b.Put(t.Context(), "k", []byte("x"), driver.PutOptions{If: driver.IfAbsent()})
	if err != nil {
		t.Fatal(err)
	}
	rc, got, err := b.Get(t.Context(), "k", driver.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rc.Close()
	_, missing, err := b.Get(t.Context(), "missing", driver.GetOptions{})
	if err == nil {
		t.Fatal("a Get of a missing key succeeded")
	}
	if !put.Time.Date.Equal(date) || !got.Time.Modified.Equal(date) || !missing.Time.Date.Equal(date) {
		t.Errorf("times %+v, %+v, %+v; want the Put's Date, the Get's modification time and the failed Get's Date, all %v",
			put.Time, got.Time, missing.Time, date)
	}
}

func parse(t *testing.T, rawURL string) *location.Location {
	t.Helper()
	loc, err := location.Parse(rawURL)
	if err != nil {
		t.Fatalf("%s: %v", rawURL, err)
	}
	return loc
}
