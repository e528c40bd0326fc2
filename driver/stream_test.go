package driver_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
)

// TestListing: a listing starts only for a prefix some valid key could
// have and a live context, and its op names the listing in its errors.
func TestListing(t *testing.T) {
	ctx := context.Background()
	first := func(ctx context.Context, p string) error {
		for _, err := range driver.Listing(ctx, "x", p, func(op *driver.Op, yield func(int, error) bool) {
			yield(0, op.Fail(nil, errors.New("boom")))
		}) {
			return err
		}
		return nil
	}
	for _, p := range []string{"", "db1", "db1/", "db1/c", "a b/%/ü"} {
		var oe *driver.OpError
		if err := first(ctx, p); !errors.As(err, &oe) || oe.Op != "list" || oe.Key != p || oe.Kind != nil {
			t.Errorf("Listing(%q): %v, want the listing's own error", p, err)
		}
	}
	for _, p := range []string{`a\b`, "a\x00", string([]byte{0xff}), strings.Repeat("a", 1024+1)} {
		if err := first(ctx, p); !errors.Is(err, driver.ErrInvalidKey) {
			t.Errorf("Listing(%q): %v, want ErrInvalidKey", p, err)
		}
	}
	dead, cancel := context.WithCancel(ctx)
	cancel()
	if err := first(dead, "p"); !errors.Is(err, context.Canceled) {
		t.Errorf("Listing with a cancelled context: %v", err)
	}
}

// stub is a Bucket whose Put records what it is given; nothing else of it
// is called.
type stub struct {
	driver.Bucket
	puts [][]byte
	opts []driver.PutOptions
}

var stubAttrs = driver.Attrs{Version: "v1", Time: driver.ServiceTime{Date: time.Date(2026, 12, 7, 20, 0, 0, 0, time.UTC)}}

func (s *stub) Put(_ context.Context, _ string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	s.puts = append(s.puts, data)
	s.opts = append(s.opts, opts)
	return stubAttrs, nil
}

// TestPutWhole: a body within part size × concurrency is stored with one
// Put under the write's options, whose Attrs PutWhole returns; a longer one
// is refused with ErrUnsupported and nothing is written, as it is when
// MayStart refuses.
func TestPutWhole(t *testing.T) {
	ctx := context.Background()
	s := &stub{}
	opts := &driver.StreamOptions{PartSize: driver.MinPartSize, Concurrency: 2}
	po := driver.PutOptions{If: driver.IfAbsent(), Metadata: driver.Metadata{"epoch": "7"}}
	a, err := driver.PutWhole(ctx, s, "k", bytes.NewReader([]byte("small")), po, opts)
	if err != nil || a.Version != stubAttrs.Version || a.Time != stubAttrs.Time || len(s.puts) != 1 || string(s.puts[0]) != "small" {
		t.Fatalf("a small body: %+v, %v, puts %q; want the Put's Attrs and one Put of the body", a, err, s.puts)
	}
	if got := s.opts[0]; got.If != driver.IfAbsent() || got.Metadata["epoch"] != "7" {
		t.Errorf("the Put was sent %+v, want the write's options %+v", got, po)
	}
	full := bytes.Repeat([]byte("x"), 2*driver.MinPartSize)
	if _, err := driver.PutWhole(ctx, s, "k", bytes.NewReader(full), po, opts); err != nil || len(s.puts) != 2 || len(s.puts[1]) != len(full) {
		t.Fatalf("a body of part size × concurrency: %v, %d puts; want it stored whole with one Put", err, len(s.puts))
	}
	big := append(full, 'x')
	if a, err := driver.PutWhole(ctx, s, "k", bytes.NewReader(big), po, opts); !errors.Is(err, driver.ErrUnsupported) || len(s.puts) != 2 || a.Version != "" {
		t.Fatalf("a body over part size × concurrency: %+v, %v, %d puts; want ErrUnsupported and nothing written", a, err, len(s.puts))
	}
	refuse := errors.New("fenced")
	opts.MayStart = func() error { return refuse }
	if _, err := driver.PutWhole(ctx, s, "k", bytes.NewReader([]byte("small")), po, opts); !errors.Is(err, refuse) || len(s.puts) != 2 {
		t.Fatalf("MayStart refusing: %v, %d puts; want its error and nothing written", err, len(s.puts))
	}
}
