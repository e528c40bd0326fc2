package put

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/mushroomdb/bucketlease/lease"
)

// TestBodyChecks: a body that matches its Check reads to io.EOF with its
// count and sum; one shorter, longer or with another SHA-256 fails with
// ErrMismatch before io.EOF, and Failed says so.
func TestBodyChecks(t *testing.T) {
	data := "twelve bytes"
	sum := sha256.Sum256([]byte(data))
	good := hex.EncodeToString(sum[:])
	for _, tc := range []struct {
		name  string
		check Check
		ok    bool
	}{
		{"no check", Check{}, true},
		{"size and sum", Check{Size: 12, HasSize: true, SHA256: good}, true},
		{"short", Check{Size: 13, HasSize: true}, false},
		{"long", Check{Size: 11, HasSize: true}, false},
		{"sum", Check{SHA256: strings.Repeat("0", 64)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBody(strings.NewReader(data), "k", nil, tc.check)
			_, err := io.ReadAll(b)
			if tc.ok {
				if err != nil || b.N() != 12 || b.Sum() != good || b.Failed() != nil {
					t.Fatalf("read %d bytes, sum %s, %v, failed %v; want 12 bytes, %s", b.N(), b.Sum(), err, b.Failed(), good)
				}
				return
			}
			if !errors.Is(err, ErrMismatch) || !errors.Is(b.Failed(), ErrMismatch) {
				t.Fatalf("read: %v, failed %v; want ErrMismatch", err, b.Failed())
			}
			if n, err := b.Read(make([]byte, 1)); n != 0 || !errors.Is(err, ErrMismatch) {
				t.Errorf("a read after the failure: %d, %v; want the same failure", n, err)
			}
		})
	}
}

// TestBodyReadErrorIsNotTheInputsFailure: a read error fails the body
// without io.ErrUnexpectedEOF (which an upload could take for a short last
// part), and Failed does not count it as the input's own failure.
func TestBodyReadErrorIsNotTheInputsFailure(t *testing.T) {
	b := newBody(io.MultiReader(strings.NewReader("x"), errReader{io.ErrUnexpectedEOF}), "k", nil, Check{})
	_, err := io.ReadAll(b)
	if err == nil || errors.Is(err, io.ErrUnexpectedEOF) || b.Failed() != nil || b.Failure() == nil {
		t.Fatalf("read: %v, failed %v, failure %v", err, b.Failed(), b.Failure())
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// TestChunks: writeChunk's chunks read back through chunkReader, which
// ends at the end chunk; a stream without it is a truncated body, and a
// chunk over maxChunk is refused.
func TestChunks(t *testing.T) {
	var buf bytes.Buffer
	for _, c := range []string{"ab", "c"} {
		if err := writeChunk(&buf, []byte(c)); err != nil {
			t.Fatal(err)
		}
	}
	whole := append([]byte(nil), buf.Bytes()...)
	_ = writeChunk(&buf, nil)
	got, err := io.ReadAll(&chunkReader{r: bufio.NewReader(&buf)})
	if err != nil || string(got) != "abc" {
		t.Fatalf("read %q, %v; want abc", got, err)
	}
	if _, err := io.ReadAll(&chunkReader{r: bufio.NewReader(bytes.NewReader(whole))}); err == nil || !strings.Contains(err.Error(), "went away") {
		t.Errorf("a body without its end chunk: %v", err)
	}
	huge := []byte{0xff, 0xff, 0xff, 0xff}
	if _, err := io.ReadAll(&chunkReader{r: bufio.NewReader(bytes.NewReader(huge))}); err == nil || !strings.Contains(err.Error(), "not a put client") {
		t.Errorf("a chunk over the limit: %v", err)
	}
}

// TestParseReply: hold's answers become put's outcomes: a version, a late
// version with a LateError, a classed Error, or a closed connection.
func TestParseReply(t *testing.T) {
	if v, err := parseReply("k", "ok \"v1\"\n"); v != "v1" || err != nil {
		t.Errorf("ok: %q, %v", v, err)
	}
	var late *LateError
	if v, err := parseReply("k", "late \"v2\"\n"); v != "v2" || !errors.As(err, &late) || !errors.Is(err, lease.ErrFenced) {
		t.Errorf("late: %q, %v", v, err)
	}
	var pe *Error
	if v, err := parseReply("k", "error precondition the key exists\n"); v != "" || !errors.As(err, &pe) || pe.Class != ClassPrecondition || err.Error() != "put k: the key exists" {
		t.Errorf("error: %q, %v", v, err)
	}
	if v, err := parseReply("k", ""); v != "" || err == nil || !strings.Contains(err.Error(), "without an answer") {
		t.Errorf("no answer: %q, %v", v, err)
	}
	if _, err := parseReply("k", "ok unquoted\n"); err == nil {
		t.Error("an unquoted version was taken")
	}
}
