package cli

import (
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/mem"
	"github.com/mushroomdb/bucketlease/internal/testsupport/wrapcheck"
)

// TestDeadlinesKeepAbilities: the bounded bucket of hold, put, show, break,
// list and probe has exactly the optional interfaces of the driver's, each
// reaching it: a Close of it closes the driver's client.
func TestDeadlinesKeepAbilities(t *testing.T) {
	loc := mustParse(t, "mem://wrapcheck/p")
	wrapcheck.Check(t, "deadlineBucket", func(_ *testing.T, in driver.Bucket) driver.Bucket {
		return withDeadlines(in, time.Minute, loc, "--timeout")
	})
}

// TestDeadlinesPassTheServiceTimeOn: the driver's report of the service's
// time (driver.WithServiceTime) reaches the caller through the bounded
// bucket, for a Put and a Get, whose request contexts it derives.
func TestDeadlinesPassTheServiceTimeOn(t *testing.T) {
	loc := mustParse(t, "mem://servicetime/p")
	date := time.Date(2026, 12, 4, 21, 0, 0, 0, time.UTC)
	b := withDeadlines(&mem.Bucket{Now: func() time.Time { return date }}, time.Minute, loc, "--timeout")
	var got []driver.ServiceTime
	ctx := driver.WithServiceTime(t.Context(), func(st driver.ServiceTime) { got = append(got, st) })
	if _, err := b.Put(ctx, "k", []byte("x"), driver.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	rc, _, err := b.Get(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	rc.Close()
	if len(got) != 2 || !got[0].Date.Equal(date) || !got[1].Modified.Equal(date) {
		t.Errorf("reports %+v, want the Put's Date and the Get's modification time, both %v", got, date)
	}
}
