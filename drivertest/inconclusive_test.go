package drivertest_test

import (
	"context"
	"io"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/mem"
	"github.com/mushroomdb/bucketlease/drivertest"
	"github.com/mushroomdb/bucketlease/drivertest/faulty"
)

// cutBodies is an honest store whose every fifth Get body ends early with
// io.ErrUnexpectedEOF, as rclone's S3 server did under concurrent writes.
type cutBodies struct {
	driver.Bucket
	n atomic.Int64
}

func (c *cutBodies) Get(ctx context.Context, key string, opts driver.GetOptions) (io.ReadCloser, driver.Attrs, error) {
	rc, a, err := c.Bucket.Get(ctx, key, opts)
	if err == nil && c.n.Add(1)%5 == 0 {
		rc.Close()
		return io.NopCloser(errReader{}), a, nil
	}
	return rc, a, err
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, io.ErrUnexpectedEOF }

// TestFailedOperationsAreInconclusiveNotEvidence: checks that fail because an
// operation could not complete are reported as inconclusive, and do not make
// the report say the service ignores preconditions; a store that does
// ignore them still does.
func TestFailedOperationsAreInconclusiveNotEvidence(t *testing.T) {
	rep := drivertest.Check(context.Background(), &cutBodies{Bucket: mem.New()}, drivertest.Options{})
	if len(rep.Inconclusive()) == 0 {
		t.Fatal("no check was inconclusive, though bodies were cut short")
	}
	if rep.Observed.Exclusion != driver.Conditional {
		t.Fatalf("cut bodies made the report observe exclusion %v; an error is not evidence", rep.Observed.Exclusion)
	}
	if rep.OK() {
		t.Fatal("a report with inconclusive checks is OK")
	}
	for _, r := range rep.Results {
		if r.Errored && r.Passed {
			t.Errorf("%s: errored and passed", r.Name)
		}
	}
	// The control: a store that ignores IfAbsent is evidence, not an error.
	rep = drivertest.CheckOnly(context.Background(), &faulty.Bucket{Bucket: mem.New(), Ignore: faulty.IgnoreIfAbsent}, drivertest.Options{}, "put-if-absent-existing")
	if rep.Observed.Exclusion != driver.NoExclusion || slices.Contains(rep.Inconclusive(), "put-if-absent-existing") {
		t.Fatalf("a store ignoring IfAbsent: observed %v, inconclusive %v", rep.Observed.Exclusion, rep.Inconclusive())
	}
}
