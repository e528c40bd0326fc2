package drivertest_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"iter"
	"strings"
	"sync"
	"testing"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/mem"
	"github.com/mushroomdb/bucketlease/drivertest"
)

// The negative controls of stream-failed-leaves-nothing and
// version-a-b-a.

// hiddenNoAbort streams through streamNoAbort, which leaves every failed
// write's upload pending, and hides its ListPending: a driver whose abort
// does nothing and that cannot list what it left.
type hiddenNoAbort struct{ n *streamNoAbort }

func (h hiddenNoAbort) Get(ctx context.Context, key string) (io.ReadCloser, driver.Version, error) {
	return h.n.Get(ctx, key)
}
func (h hiddenNoAbort) Put(ctx context.Context, key string, data []byte, c driver.Condition) (driver.Version, error) {
	return h.n.Put(ctx, key, data, c)
}
func (h hiddenNoAbort) Delete(ctx context.Context, key string, c driver.Condition) error {
	return h.n.Delete(ctx, key, c)
}
func (h hiddenNoAbort) Capabilities() driver.Capabilities { return h.n.Capabilities() }
func (h hiddenNoAbort) PutStream(ctx context.Context, key string, r io.Reader, c driver.Condition, o *driver.StreamOptions) (driver.Version, error) {
	return h.n.PutStream(ctx, key, r, c, o)
}
func (h hiddenNoAbort) List(ctx context.Context, prefix string) iter.Seq2[driver.Object, error] {
	return h.n.List(ctx, prefix)
}

// pendingOf is the Options.Pending an author of hiddenNoAbort would
// write: what the service keeps, read by the author's own means.
func pendingOf(n *streamNoAbort) func(ctx context.Context, key string) ([]string, error) {
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
	n := &streamNoAbort{Bucket: mem.New()}
	var _ driver.Streamer = hiddenNoAbort{n}
	if _, ok := any(hiddenNoAbort{n}).(driver.PendingLister); ok {
		t.Fatal("hiddenNoAbort lists its pending uploads")
	}
	abortChecks := []string{"stream-failed-leaves-nothing", "stream-canceled-mid-body", "stream-may-start-refused", "stream-if-absent-existing", "stream-if-match-stale"}
	failed, _ := failedChecks(t, hiddenNoAbort{n}, drivertest.Options{Pending: pendingOf(n)}, abortChecks...)
	for _, check := range abortChecks {
		mustCatch(t, failed, check, "left a pending upload")
	}
}

// Without ListPending or Options.Pending the suite cannot see the
// uploads: the check says so, skipped, and never passes.
func TestStreamNotAbortedUnseenIsSkipped(t *testing.T) {
	rep := drivertest.CheckOnly(context.Background(), hiddenNoAbort{&streamNoAbort{Bucket: mem.New()}}, drivertest.Options{}, "stream-failed-leaves-nothing")
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

// stagesAsObjects stages a streamed write under a key of the bucket
// (key + ".part") and leaves it there when the write fails; it cannot
// list pending uploads, but its List shows the staged object.
type stagesAsObjects struct{ hiddenNoAbort }

func (s stagesAsObjects) PutStream(ctx context.Context, key string, r io.Reader, c driver.Condition, o *driver.StreamOptions) (driver.Version, error) {
	v, err := s.n.Bucket.PutStream(ctx, key, r, c, o)
	if err != nil {
		s.n.Bucket.Put(context.WithoutCancel(ctx), key+".part", []byte("staged"), driver.Condition{})
	}
	return v, err
}

func TestStreamStagedObjectSeenByList(t *testing.T) {
	failed, _ := failedChecks(t, stagesAsObjects{hiddenNoAbort{&streamNoAbort{Bucket: mem.New()}}}, drivertest.Options{}, "stream-failed-leaves-nothing")
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
	rc, v, err := d.Bucket.Get(ctx, key)
	if err != nil {
		return nil, "", "", err
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return nil, "", "", err
	}
	return data, v, d.version(data), nil
}

func (d *derivedVersions) Get(ctx context.Context, key string) (io.ReadCloser, driver.Version, error) {
	data, _, v, err := d.current(ctx, key)
	if err != nil {
		return nil, "", err
	}
	return io.NopCloser(strings.NewReader(string(data))), v, nil
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
		return driver.IfMatch(driver.FakeVersion(driver.Version(fmt.Sprint("missing-", w))))
	}
	if v == w {
		return driver.IfMatch(iv)
	}
	return driver.IfMatch(driver.FakeVersion(iv))
}

func (d *derivedVersions) Put(ctx context.Context, key string, data []byte, c driver.Condition) (driver.Version, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, err := d.Bucket.Put(ctx, key, data, d.inner(ctx, key, c)); err != nil {
		return "", err
	}
	return d.version(data), nil
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
	failed, _ := failedChecks(t, plainOf(d), drivertest.Options{}, "version-a-b-a")
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
	rep := drivertest.CheckOnly(context.Background(), plainOf(d), drivertest.Options{}, "version-a-b-a")
	for _, r := range rep.Results {
		if r.Name == "version-a-b-a" && r.Status() != "PASS" {
			t.Errorf("version-a-b-a on content-hash versions: %s (%s), want PASS", r.Status(), r.Got)
		}
	}
}

// plainOf is d with Bucket's four methods only (no stream, no list,
// whose versions would be mem's own).
func plainOf(d *derivedVersions) driver.Bucket { return derivedPlain{d} }

type derivedPlain struct{ d *derivedVersions }

func (p derivedPlain) Get(ctx context.Context, key string) (io.ReadCloser, driver.Version, error) {
	return p.d.Get(ctx, key)
}
func (p derivedPlain) Put(ctx context.Context, key string, data []byte, c driver.Condition) (driver.Version, error) {
	return p.d.Put(ctx, key, data, c)
}
func (p derivedPlain) Delete(ctx context.Context, key string, c driver.Condition) error {
	return p.d.Delete(ctx, key, c)
}
func (p derivedPlain) Capabilities() driver.Capabilities { return p.d.Capabilities() }
