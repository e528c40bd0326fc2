package driver_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
)

func TestBeginList(t *testing.T) {
	ctx := context.Background()
	for _, p := range []string{"", "db1", "db1/", "db1/c", "a b/%/ü"} {
		if _, err := driver.BeginList(ctx, "x", p); err != nil {
			t.Errorf("BeginList(%q): %v", p, err)
		}
	}
	for _, p := range []string{`a\b`, "a\x00", string([]byte{0xff}), strings.Repeat("a", driver.MaxKeyLen+1)} {
		if _, err := driver.BeginList(ctx, "x", p); !errors.Is(err, driver.ErrInvalidKey) {
			t.Errorf("BeginList(%q): %v, want ErrInvalidKey", p, err)
		}
	}
	dead, cancel := context.WithCancel(ctx)
	cancel()
	op, err := driver.BeginList(dead, "x", "p")
	if !errors.Is(err, context.Canceled) {
		t.Errorf("BeginList with a cancelled context: %v", err)
	}
	var oe *driver.OpError
	if !errors.As(op.Fail(nil, errors.New("boom")), &oe) || oe.Op != "list" || oe.Key != "p" {
		t.Errorf("the list operation's error names %+v", oe)
	}
}

func TestUploadErrorSaysWhatBecameOfTheUpload(t *testing.T) {
	cause := errors.New("part 2 failed")
	abortErr := errors.New("abort refused")
	for _, c := range []struct {
		e    driver.UploadError
		want string
	}{
		{driver.UploadError{Err: cause}, "nothing had been staged"},
		{driver.UploadError{Err: cause, Staged: true, Aborted: true, Upload: "multipart upload U"}, "(multipart upload U) was aborted"},
		{driver.UploadError{Err: cause, Staged: true, AbortErr: abortErr, Upload: "multipart upload U"}, "failed too (abort refused)"},
	} {
		if got := c.e.Error(); !strings.Contains(got, c.want) || !strings.HasPrefix(got, "part 2 failed") {
			t.Errorf("%+v: %q, want it to say %q", c.e, got, c.want)
		}
		if !errors.Is(&c.e, cause) {
			t.Errorf("%+v does not wrap its cause", c.e)
		}
	}
	e := &driver.UploadError{Err: cause, Staged: true, AbortErr: abortErr}
	if !errors.Is(e, abortErr) {
		t.Error("the abort's error is not in the chain")
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
	if got := s.opts[0]; !got.If.Absent() || got.Metadata["epoch"] != "7" {
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

// oneShot returns its bytes and its error from one Read, then err alone.
type oneShot struct {
	data []byte
	err  error
}

func (o *oneShot) Read(p []byte) (int, error) {
	n := copy(p, o.data)
	o.data = o.data[n:]
	if len(o.data) > 0 {
		return n, nil
	}
	return n, o.err
}

// Only the reader's own io.EOF ends a body: its io.ErrUnexpectedEOF (a cut
// HTTP body, gzip) and an error that comes with the bytes that fill the
// buffer are the read's error.
func TestReadPartKeepsTheReadersError(t *testing.T) {
	ctx := context.Background()
	other := errors.New("the producer died")
	for _, c := range []struct {
		name string
		data int
		err  error
		want error
	}{
		{"clean EOF, short part", 3, io.EOF, io.EOF},
		{"clean EOF with the bytes that fill the buffer: the last part", 8, io.EOF, io.EOF},
		{"no error, filled", 9, io.EOF, nil},
		{"reader's unexpected EOF, short part", 3, io.ErrUnexpectedEOF, io.ErrUnexpectedEOF},
		{"reader's unexpected EOF with the bytes that fill the buffer", 8, io.ErrUnexpectedEOF, io.ErrUnexpectedEOF},
		{"other error with the bytes that fill the buffer", 8, other, other},
		{"other error, short part", 5, other, other},
	} {
		buf := make([]byte, 8)
		n, err := driver.ReadPart(ctx, &oneShot{data: bytes.Repeat([]byte("x"), c.data), err: c.err}, buf)
		if n != min(c.data, len(buf)) || err != c.want {
			t.Errorf("%s: ReadPart = %d, %v; want %d, %v", c.name, n, err, min(c.data, len(buf)), c.want)
		}
	}
	// Empty reads, then the end: bounded, so that a ReadPart that waits
	// through empty reads for ever (as io.ReadFull does) fails, not hangs.
	empty := 0
	stalls := readerFunc(func([]byte) (int, error) {
		if empty++; empty > 1000 {
			return 0, io.EOF
		}
		return 0, nil
	})
	if _, err := driver.ReadPart(ctx, stalls, make([]byte, 8)); err != io.ErrNoProgress {
		t.Errorf("a reader that returns nothing, read after read: %v, want io.ErrNoProgress", err)
	}
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }
