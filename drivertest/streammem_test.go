package drivertest_test

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/file"
	"github.com/mushroomdb/bucketlease/drivertest"
)

// buffersWhole is the file driver (whose objects live on disk, not in this
// process's heap) with a PutStream that reads the whole body into memory
// before it writes a byte, as a driver that sends one request of a known
// length, or hashes the body first, does.
type buffersWhole struct{ *file.Bucket }

func (b buffersWhole) PutStream(ctx context.Context, key string, r io.Reader, po driver.PutOptions, o *driver.StreamOptions) (driver.Attrs, error) {
	all, err := io.ReadAll(r)
	if err != nil {
		return driver.Attrs{}, &driver.OpError{Driver: "buffers", Op: "put", Key: key, Cond: po.If, Err: err}
	}
	return b.Bucket.PutStream(ctx, key, bytes.NewReader(all), po, o)
}

func TestStreamBufferedWhole(t *testing.T) {
	fb, err := file.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	failed, _ := failedChecks(t, buffersWhole{fb}, drivertest.Options{}, "stream-memory-bounded")
	mustCatch(t, failed, "stream-memory-bounded", "never the whole of it")
}

// TestStreamMemoryOfFile: the file driver, whose parts go to disk as they
// are read, passes with the bound's margin to spare.
func TestStreamMemoryOfFile(t *testing.T) {
	fb, err := file.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rep := drivertest.CheckOnly(context.Background(), fb, drivertest.Options{}, "stream-memory-bounded")
	if r := rep.Results[0]; r.Status() != "PASS" {
		t.Fatalf("%s on file: %s (%s)", r.Name, r.Status(), r.Got)
	}
}
