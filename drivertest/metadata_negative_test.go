package drivertest_test

import (
	"context"
	"io"
	"iter"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/mem"
	"github.com/mushroomdb/bucketlease/drivertest"
)

// The negative controls of the metadata checks: for each, a driver over
// mem that declares metadata and breaks one of its properties, and the
// check that catches it.

// metadataChecks are the names of the metadata checks.
var metadataChecks = []string{"metadata-roundtrip", "metadata-streamed", "metadata-refused-write", "metadata-listed", "metadata-invalid"}

// runMetadata runs only the metadata checks' verdicts from a report run of
// the suite against b.
func runMetadata(t *testing.T, b driver.Bucket) map[string]string {
	t.Helper()
	failed, rep := failedChecks(t, b, drivertest.Options{}, metadataChecks...)
	out := map[string]string{}
	for _, r := range rep.Results {
		if strings.HasPrefix(r.Name, "metadata-") {
			if msg, ok := failed[r.Name]; ok {
				out[r.Name] = msg
			}
		}
	}
	return out
}

// TestMetadataMemConforms: mem passes every metadata check, none skipped.
func TestMetadataMemConforms(t *testing.T) {
	rep := drivertest.CheckOnly(context.Background(), mem.New(), drivertest.Options{}, metadataChecks...)
	for _, r := range rep.Results {
		if strings.HasPrefix(r.Name, "metadata-") && (!r.Passed || r.Skipped) {
			t.Errorf("%s on mem: %s (%s)", r.Name, r.Status(), r.Got)
		}
	}
}

// TestMetadataUndeclaredSkipped: a driver that does not declare metadata
// has every metadata check skipped, saying why.
func TestMetadataUndeclaredSkipped(t *testing.T) {
	b, _ := wireOptions(t, mem.New(), wireHonest)
	rep := drivertest.CheckOnly(context.Background(), b, drivertest.Options{}, metadataChecks...)
	n := 0
	for _, r := range rep.Results {
		if strings.HasPrefix(r.Name, "metadata-") {
			n++
			if !r.Skipped || !strings.Contains(r.Got, "does not declare metadata") {
				t.Errorf("%s on a driver without metadata: %s (%s), want it skipped as undeclared", r.Name, r.Status(), r.Got)
			}
		}
	}
	if n != len(metadataChecks) {
		t.Errorf("%d metadata checks ran, want %d", n, len(metadataChecks))
	}
}

// dropsMeta declares metadata and stores none.
type dropsMeta struct{ *mem.Bucket }

func (b dropsMeta) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	opts.Metadata = nil
	return b.Bucket.Put(ctx, key, data, opts)
}

func (b dropsMeta) PutStream(ctx context.Context, key string, r io.Reader, opts driver.PutOptions, s *driver.StreamOptions) (driver.Attrs, error) {
	opts.Metadata = nil
	return b.Bucket.PutStream(ctx, key, r, opts, s)
}

func TestMetadataDropped(t *testing.T) {
	failed := runMetadata(t, dropsMeta{mem.New()})
	mustCatch(t, failed, "metadata-roundtrip", "epoch is missing")
	mustCatch(t, failed, "metadata-streamed", "epoch is missing")
}

// streamDropsMeta stores metadata on Put and drops it on a streamed write.
type streamDropsMeta struct{ *mem.Bucket }

func (b streamDropsMeta) PutStream(ctx context.Context, key string, r io.Reader, opts driver.PutOptions, s *driver.StreamOptions) (driver.Attrs, error) {
	opts.Metadata = nil
	return b.Bucket.PutStream(ctx, key, r, opts, s)
}

func TestMetadataDroppedOnStreams(t *testing.T) {
	failed := runMetadata(t, streamDropsMeta{mem.New()})
	mustCatch(t, failed, "metadata-streamed", "a streamed write of three parts")
	if msg, ok := failed["metadata-roundtrip"]; ok {
		t.Errorf("metadata-roundtrip failed for a driver whose Put is right: %s", msg)
	}
}

// currentMeta reads key's metadata, nil if it is missing.
func currentMeta(ctx context.Context, b *mem.Bucket, key string) (driver.Metadata, driver.Version) {
	rc, a, err := b.Get(ctx, key, driver.GetOptions{Metadata: true})
	if err != nil {
		return nil, ""
	}
	rc.Close()
	return a.Metadata, a.Version
}

// keepsOldKeys merges a write's metadata into the old version's, as a
// service's "update metadata" call would.
type keepsOldKeys struct{ *mem.Bucket }

func (b keepsOldKeys) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	old, _ := currentMeta(ctx, b.Bucket, key)
	md := maps.Clone(old)
	if md == nil {
		md = driver.Metadata{}
	}
	for k, v := range opts.Metadata {
		md[k] = v
	}
	opts.Metadata = md
	return b.Bucket.Put(ctx, key, data, opts)
}

func TestMetadataOldKeysKept(t *testing.T) {
	failed := runMetadata(t, keepsOldKeys{mem.New()})
	mustCatch(t, failed, "metadata-roundtrip", "a stale key of an earlier version")
}

// secondRequest writes the body, and then, a round trip later, the
// metadata in a second request: a reader in between sees the body
// without it.
type secondRequest struct{ *mem.Bucket }

func (b secondRequest) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	md := opts.Metadata
	a, err := b.Bucket.Put(ctx, key, data, driver.PutOptions{If: opts.If})
	if err != nil || len(md) == 0 {
		return a, err
	}
	time.Sleep(20 * time.Millisecond)
	return b.Bucket.Put(ctx, key, data, driver.PutOptions{If: driver.IfMatch(a.Version), Metadata: md})
}

func TestMetadataSetInASecondRequest(t *testing.T) {
	failed := runMetadata(t, secondRequest{mem.New()})
	mustCatch(t, failed, "metadata-roundtrip", "in another request than the body's")
}

// metaFirst sets the new metadata on the current object before the
// conditional write (as a metadata update followed by the upload would),
// so that a refused write has changed it.
type metaFirst struct{ *mem.Bucket }

func (b metaFirst) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	if md := opts.Metadata; len(md) > 0 && opts.If != (driver.Condition{}) {
		rc, a, err := b.Bucket.Get(ctx, key, driver.GetOptions{})
		if err == nil {
			cur, _ := io.ReadAll(rc)
			rc.Close()
			na, err := b.Bucket.Put(ctx, key, cur, driver.PutOptions{If: driver.IfMatch(a.Version), Metadata: md})
			if err == nil {
				if m, ok := opts.If.Match(); ok && m == a.Version {
					opts.If = driver.IfMatch(na.Version)
				}
			}
		}
	}
	return b.Bucket.Put(ctx, key, data, opts)
}

func TestMetadataChangedByARefusedWrite(t *testing.T) {
	failed := runMetadata(t, metaFirst{mem.New()})
	mustCatch(t, failed, "metadata-refused-write", "after a refused Put IfAbsent")
}

// listsNoMeta declares ListMetadata and lists none.
type listsNoMeta struct{ *mem.Bucket }

func (b listsNoMeta) List(ctx context.Context, prefix string) iter.Seq2[driver.Object, error] {
	return func(yield func(driver.Object, error) bool) {
		for o, err := range b.Bucket.List(ctx, prefix) {
			o.Metadata = nil
			if !yield(o, err) {
				return
			}
		}
	}
}

// listsMetaUndeclared lists metadata without declaring ListMetadata.
type listsMetaUndeclared struct{ *mem.Bucket }

func (b listsMetaUndeclared) Capabilities() driver.Capabilities {
	c := b.Bucket.Capabilities()
	c.ListMetadata = false
	return c
}

func TestMetadataListed(t *testing.T) {
	failed := runMetadata(t, listsNoMeta{mem.New()})
	mustCatch(t, failed, "metadata-listed", "with nil metadata")
	failed = runMetadata(t, listsMetaUndeclared{mem.New()})
	mustCatch(t, failed, "metadata-listed", "though the driver does not declare ListMetadata")
}

// sanitises drops the metadata entries the portable rule refuses and
// writes the rest, instead of refusing the write.
type sanitises struct{ *mem.Bucket }

func (b sanitises) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	md := driver.Metadata{}
	for k, v := range opts.Metadata {
		if (driver.Metadata{k: v}).Validate() == nil {
			md[k] = v
		}
	}
	opts.Metadata = md
	return b.Bucket.Put(ctx, key, data, opts)
}

func TestMetadataInvalidAccepted(t *testing.T) {
	failed := runMetadata(t, sanitises{mem.New()})
	mustCatch(t, failed, "metadata-invalid", "want ErrInvalidMetadata")
}
