package drivertest_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/besteffort"
	"github.com/mushroomdb/bucketlease/driver/mem"
	"github.com/mushroomdb/bucketlease/driver/multipart"
	"github.com/mushroomdb/bucketlease/drivertest"
	"github.com/mushroomdb/bucketlease/internal/objects"
)

// The negative controls of stream-failed-leaves-nothing and
// version-a-b-a.

// pendingOf is the Options.Pending an author of a driver that is no
// PendingLister would write: what the service keeps, read by the author's
// own means.
func pendingOf(n *brokenStream) func(ctx context.Context, key string) ([]string, error) {
	return func(ctx context.Context, key string) ([]string, error) {
		var ups []string
		for p, err := range n.ListPending(ctx, key) {
			if err != nil {
				return nil, err
			}
			if p.Key == key {
				ups = append(ups, p.Upload)
			}
		}
		return ups, nil
	}
}

func TestStreamNotAbortedSeenThroughOptionsPending(t *testing.T) {
	n := &brokenStream{Bucket: mem.New(), noAbort: true}
	if _, ok := any(streamOnly{n}).(multipart.PendingLister); ok {
		t.Fatal("streamOnly lists its pending uploads")
	}
	checks := append([]string{"stream-failed-leaves-nothing"}, abortChecks...)
	failed, _ := failedChecks(t, streamOnly{n}, drivertest.Options{Pending: pendingOf(n)}, checks...)
	for _, check := range checks {
		mustCatch(t, failed, check, "left a pending upload")
	}
}

// An upload a failed write leaves where its error declares it left
// (staged, not aborted, no abort error: a service with no call that
// removes it, as Azure's blocks and GCS's sessions) is accepted; the same
// upload behind an error that says it was aborted is not
// (TestStreamNotAbortedSeenThroughOptionsPending).
func TestStreamLeftoversDeclaredAreAccepted(t *testing.T) {
	n := &brokenStream{Bucket: mem.New(), noAbort: true, declareLeft: true}
	checks := append([]string{"stream-failed-leaves-nothing", "stream-reader-fails"}, abortChecks...)
	rep := drivertest.CheckOnly(context.Background(), streamOnly{n}, drivertest.Options{Pending: pendingOf(n)}, checks...)
	for _, r := range rep.Results {
		if r.Status() != "PASS" {
			t.Errorf("%s on a driver whose failed writes declare what they leave: %s (%s), want PASS", r.Name, r.Status(), r.Got)
		}
	}
	n.mu.Lock()
	left := len(n.pending)
	n.mu.Unlock()
	if left == 0 {
		t.Fatal("the driver left nothing pending: the control proves nothing")
	}
}

// stagesNothing is an Options.Pending for a driver that stages nothing
// (driver.PutWhole): it has no uploads to list.
func stagesNothing(context.Context, string) ([]string, error) { return nil, nil }

// Over a driver that cannot stage parts (driver.PutWhole), alone and under
// besteffort, stream-failed-leaves-nothing runs with bodies the driver
// takes and passes; it does not skip for a body too long.
func TestStreamFailedLeavesNothingOnAWholeDriver(t *testing.T) {
	for name, b := range map[string]driver.Bucket{
		"PutWhole":            wholeOnly{mem.New()},
		"besteffort/PutWhole": besteffort.Wrap(wholeOnly{mem.New()}),
	} {
		rep := drivertest.CheckOnly(context.Background(), b, drivertest.Options{Pending: stagesNothing}, "stream-failed-leaves-nothing")
		for _, r := range rep.Results {
			if r.Status() != "PASS" {
				t.Errorf("%s on %s: %s (%s), want PASS", r.Name, name, r.Status(), r.Got)
			}
		}
	}
}

// Without ListPending or Options.Pending the suite cannot see the
// uploads: the check says so, skipped, and never passes.
func TestStreamNotAbortedUnseenIsSkipped(t *testing.T) {
	rep := drivertest.CheckOnly(context.Background(), streamOnly{&brokenStream{Bucket: mem.New(), noAbort: true}}, drivertest.Options{}, "stream-failed-leaves-nothing")
	for _, r := range rep.Results {
		if r.Name != "stream-failed-leaves-nothing" {
			continue
		}
		if r.Passed || !r.Skipped || !strings.Contains(r.Got, "skipped: ") || !strings.Contains(r.Got, "Options.Pending is nil") {
			t.Errorf("%s on a driver whose uploads the suite cannot see: %s (%s), want skipped, saying why", r.Name, r.Status(), r.Got)
		}
		return
	}
	t.Fatal("no result for stream-failed-leaves-nothing")
}

// A driver that stages a streamed write under a key of the bucket and
// leaves it there when the write fails cannot list pending uploads, but
// its List shows the staged object.
func TestStreamStagedObjectSeenByList(t *testing.T) {
	failed, _ := failedChecks(t, streamOnly{&brokenStream{Bucket: mem.New(), stageAsObject: true}}, drivertest.Options{}, "stream-failed-leaves-nothing")
	mustCatch(t, failed, "stream-failed-leaves-nothing", "List shows")
}

// derivedVersions is the mem driver with versions derived from the body
// by version: mem's own versions stay inside, mapped to and from the
// derived ones.
type derivedVersions struct {
	*mem.Bucket
	version func(data []byte) driver.Version
	mu      sync.Mutex
}

func (d *derivedVersions) current(ctx context.Context, key string) ([]byte, driver.Version, driver.Version, error) {
	rc, a, err := d.Bucket.Get(ctx, key, driver.GetOptions{})
	if err != nil {
		return nil, "", "", err
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return nil, "", "", err
	}
	return data, a.Version, d.version(data), nil
}

func (d *derivedVersions) Get(ctx context.Context, key string, _ driver.GetOptions) (io.ReadCloser, driver.Attrs, error) {
	data, _, v, err := d.current(ctx, key)
	if err != nil {
		return nil, driver.Attrs{}, err
	}
	return io.NopCloser(strings.NewReader(string(data))), driver.Attrs{Version: v}, nil
}

// inner translates an IfMatch of a derived version into mem's own
// version when it names the current object, and into one mem refuses
// otherwise.
func (d *derivedVersions) inner(ctx context.Context, key string, c driver.Condition) driver.Condition {
	w, ok := c.Match()
	if !ok {
		return c
	}
	_, iv, v, err := d.current(ctx, key)
	if err != nil {
		return driver.IfMatch(objects.FakeVersion(driver.Version(fmt.Sprint("missing-", w))))
	}
	if v == w {
		return driver.IfMatch(iv)
	}
	return driver.IfMatch(objects.FakeVersion(iv))
}

func (d *derivedVersions) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	opts.If = d.inner(ctx, key, opts.If)
	if _, err := d.Bucket.Put(ctx, key, data, opts); err != nil {
		return driver.Attrs{}, err
	}
	return driver.Attrs{Version: d.version(data)}, nil
}

func (d *derivedVersions) Delete(ctx context.Context, key string, c driver.Condition) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.Bucket.Delete(ctx, key, d.inner(ctx, key, c))
}

// A version derived from less than the body (its length) repeats for
// different bytes: IfMatch cannot tell A from B.
func TestVersionsFromLengthFail(t *testing.T) {
	d := &derivedVersions{Bucket: mem.New(), version: func(data []byte) driver.Version {
		return driver.Version(fmt.Sprintf("len-%d", len(data)))
	}}
	failed, _ := failedChecks(t, bucketOnly{d}, drivertest.Options{}, "version-a-b-a")
	mustCatch(t, failed, "version-a-b-a", "got the same version")
}

// A version that is the whole body's hash repeats only for identical
// bytes, which the contract allows (S3's ETags do it): version-a-b-a
// passes.
func TestVersionsFromContentHashPass(t *testing.T) {
	d := &derivedVersions{Bucket: mem.New(), version: func(data []byte) driver.Version {
		h := sha256.Sum256(data)
		return driver.Version(hex.EncodeToString(h[:]))
	}}
	rep := drivertest.CheckOnly(context.Background(), bucketOnly{d}, drivertest.Options{}, "version-a-b-a")
	for _, r := range rep.Results {
		if r.Name == "version-a-b-a" && r.Status() != "PASS" {
			t.Errorf("version-a-b-a on content-hash versions: %s (%s), want PASS", r.Status(), r.Got)
		}
	}
}
