package multipart_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/mushroomdb/bucketlease/driver/multipart"
)

func TestUploadErrorSaysWhatBecameOfTheUpload(t *testing.T) {
	cause := errors.New("part 2 failed")
	abortErr := errors.New("abort refused")
	for _, c := range []struct {
		e    multipart.UploadError
		want string
	}{
		{multipart.UploadError{Err: cause}, "nothing had been staged"},
		{multipart.UploadError{Err: cause, Staged: true, Aborted: true, Upload: "multipart upload U"}, "(multipart upload U) was aborted"},
		{multipart.UploadError{Err: cause, Staged: true, AbortErr: abortErr, Upload: "multipart upload U"}, "failed too (abort refused)"},
	} {
		if got := c.e.Error(); !strings.Contains(got, c.want) || !strings.HasPrefix(got, "part 2 failed") {
			t.Errorf("%+v: %q, want it to say %q", c.e, got, c.want)
		}
		if !errors.Is(&c.e, cause) {
			t.Errorf("%+v does not wrap its cause", c.e)
		}
	}
	e := &multipart.UploadError{Err: cause, Staged: true, AbortErr: abortErr}
	if !errors.Is(e, abortErr) {
		t.Error("the abort's error is not in the chain")
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
		n, err := multipart.ReadPart(ctx, &oneShot{data: bytes.Repeat([]byte("x"), c.data), err: c.err}, buf)
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
	if _, err := multipart.ReadPart(ctx, stalls, make([]byte, 8)); err != io.ErrNoProgress {
		t.Errorf("a reader that returns nothing, read after read: %v, want io.ErrNoProgress", err)
	}
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }
