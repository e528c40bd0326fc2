//go:build unix

package file_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/file"
	"github.com/mushroomdb/bucketlease/driver/multipart"
)

// countdown is a context that cancels itself at its n-th look (Done or
// Err), and counts the looks.
type countdown struct {
	context.Context
	cancel context.CancelFunc
	n      int64
	looks  atomic.Int64
}

func newCountdown(n int64) *countdown {
	ctx, cancel := context.WithCancel(context.Background())
	return &countdown{Context: ctx, cancel: cancel, n: n}
}

func (c *countdown) tick() {
	if c.looks.Add(1) == c.n {
		c.cancel()
	}
}
func (c *countdown) Done() <-chan struct{} { c.tick(); return c.Context.Done() }
func (c *countdown) Err() error            { c.tick(); return c.Context.Err() }

// TestPutHonoursCancellationAtEveryStep: a Put whose
// context ends at any of its looks at it, including those after the key's
// lock is taken (while writing, before the rename), fails with
// context.Canceled and leaves the object as it was. The Put of 3 MiB looks
// at its context once per MiB written, and last just before the rename.
func TestPutHonoursCancellationAtEveryStep(t *testing.T) {
	dir := t.TempDir()
	b, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	v, err := b.Put(ctx, "k", []byte("old"), driver.PutOptions{If: driver.IfAbsent()})
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("x"), 3<<20)
	probe := newCountdown(-1) // never cancels: counts the looks of a whole Put
	if _, err := b.Put(probe, "other", big, driver.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	looks := probe.looks.Load()
	if looks < 5 {
		t.Fatalf("a Put of 3 MiB looked at its context %d times; it should look while writing and before the rename", looks)
	}
	for n := int64(1); n <= looks; n++ {
		c := newCountdown(n)
		_, err := b.Put(c, "k", big, driver.PutOptions{If: driver.IfMatch(v.Version)})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("a Put cancelled at its look %d of %d: %v, want context.Canceled", n, looks, err)
		}
		rc, gv, err := b.Get(ctx, "k", driver.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(rc)
		rc.Close()
		if gv.Version != v.Version || string(data) != "old" {
			t.Fatalf("a Put cancelled at its look %d of %d changed the object (%d bytes)", n, looks, len(data))
		}
	}
	assertNoTemp(t, dir)
}

// TestPutStreamHonoursCancellationAtEveryStep: the same for PutStream,
// whose body is copied in parts, and whose temporary file is removed.
func TestPutStreamHonoursCancellationAtEveryStep(t *testing.T) {
	dir := t.TempDir()
	b, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	body := bytes.Repeat([]byte("y"), 2*driver.MinPartSize+1)
	opts := &driver.StreamOptions{PartSize: driver.MinPartSize}
	probe := newCountdown(-1)
	if _, err := b.PutStream(probe, "other", bytes.NewReader(body), driver.PutOptions{}, opts); err != nil {
		t.Fatal(err)
	}
	looks := probe.looks.Load()
	for n := int64(1); n <= looks; n++ {
		c := newCountdown(n)
		_, err := b.PutStream(c, "k", bytes.NewReader(body), driver.PutOptions{If: driver.IfAbsent()}, opts)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("a PutStream cancelled at its look %d of %d: %v, want context.Canceled", n, looks, err)
		}
		if _, _, err := b.Get(ctx, "k", driver.GetOptions{}); !errors.Is(err, driver.ErrNotExist) {
			t.Fatalf("a PutStream cancelled at its look %d of %d: Get: %v, want ErrNotExist", n, looks, err)
		}
		var ue *multipart.UploadError
		if errors.As(err, &ue) && ue.Staged && !ue.Aborted {
			t.Fatalf("a PutStream cancelled at its look %d of %d: %v does not say its temporary file was removed", n, looks, err)
		}
	}
	assertNoTemp(t, dir)
}

// assertNoTemp fails if a temporary file is left in the bucket at dir.
func assertNoTemp(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, ".bucketlease", "tmp"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		t.Errorf("temporary file %s left behind", e.Name())
	}
}
