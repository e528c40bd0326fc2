package objects_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"testing/iotest"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/mem"
	"github.com/mushroomdb/bucketlease/internal/objects"
)

func TestFakeVersion(t *testing.T) {
	for _, v := range []driver.Version{`"9b2cf535f27731c974343645a3985328"`, "1700000000000009", "0x8DCBA9F00FF", "m12", ""} {
		f := objects.FakeVersion(v)
		if f == v || len(f) == 0 {
			t.Errorf("FakeVersion(%q) = %q", v, f)
		}
		if len(v) > 0 && len(f) != len(v) {
			t.Errorf("FakeVersion(%q) = %q changes the length", v, f)
		}
	}
	if f := objects.FakeVersion("9"); f == "0" {
		t.Error("a generation number became 0, which means 'absent' to GCS")
	}
}

func TestReadAllBounded(t *testing.T) {
	b := mem.New()
	ctx := context.Background()
	if _, err := b.Put(ctx, "big", make([]byte, 2048), driver.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := objects.ReadAll(ctx, b, "big", 1024, driver.GetOptions{}); !errors.Is(err, objects.ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
	if data, _, err := objects.ReadAll(ctx, b, "big", 2048, driver.GetOptions{}); err != nil || len(data) != 2048 {
		t.Fatalf("ReadAll at the limit: %d bytes, %v", len(data), err)
	}
}

// brokenBody is a Bucket whose Get answers with attrs and a body that
// fails when read.
type brokenBody struct {
	driver.Bucket
	attrs driver.Attrs
}

func (b brokenBody) Get(context.Context, string, driver.GetOptions) (io.ReadCloser, driver.Attrs, error) {
	return io.NopCloser(iotest.ErrReader(errors.New("connection reset"))), b.attrs, nil
}

// TestReadAllAttrs: ReadAll returns Get's Attrs, the metadata asked for
// included; with an error it keeps the service's time (a missing key, a
// body that failed) but no version, and with ErrTooLarge the whole Attrs
// of the object it refused.
func TestReadAllAttrs(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 7, 20, 0, 0, 0, time.UTC)
	b := &mem.Bucket{Now: func() time.Time { return now }}
	if _, a, err := objects.ReadAll(ctx, b, "missing", 10, driver.GetOptions{}); !errors.Is(err, driver.ErrNotExist) || !a.Time.Date.Equal(now) {
		t.Errorf("a missing key: %+v, %v; want ErrNotExist with the service's time %v", a, err, now)
	}
	put, err := b.Put(ctx, "k", []byte("body"), driver.PutOptions{Metadata: driver.Metadata{"epoch": "3"}})
	if err != nil {
		t.Fatal(err)
	}
	data, a, err := objects.ReadAll(ctx, b, "k", 10, driver.GetOptions{Metadata: true})
	if err != nil || string(data) != "body" || a.Version != put.Version || a.Metadata["epoch"] != "3" || !a.Time.Date.Equal(now) {
		t.Errorf("ReadAll: %q, %+v, %v; want the body, version %s, epoch=3 and the service's time", data, a, err, put.Version)
	}
	if _, a, err := objects.ReadAll(ctx, b, "k", 3, driver.GetOptions{}); !errors.Is(err, objects.ErrTooLarge) || a.Version != put.Version {
		t.Errorf("ReadAll over the limit: %+v, %v; want ErrTooLarge with the object's version %s", a, err, put.Version)
	}
	broken := brokenBody{attrs: driver.Attrs{Version: "v1", Time: driver.ServiceTime{Date: now}}}
	if _, a, err := objects.ReadAll(ctx, broken, "k", 10, driver.GetOptions{}); err == nil || a.Version != "" || !a.Time.Date.Equal(now) {
		t.Errorf("a body that failed: %+v, %v; want its error with the service's time and no version", a, err)
	}
}
