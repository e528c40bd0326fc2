package gcs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"syscall"
	"testing"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/gcs"
	"github.com/mushroomdb/bucketlease/internal/objects"
)

// wireOfWhatWasRead plays a network that delivers whatever of a single
// upload request's body was written before its source failed: it reads the
// body, cancels the Put's context once after bytes were read, reads on
// until the body ends or fails, and sends the service the bytes it read as
// a complete request, as a connection that had carried them already would
// have.
type wireOfWhatWasRead struct {
	after  int
	cancel context.CancelFunc
	once   sync.Once
}

func (w *wireOfWhatWasRead) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodPost || r.URL.Query().Get("uploadType") != "multipart" {
		return http.DefaultTransport.RoundTrip(r)
	}
	var got bytes.Buffer
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Body.Read(buf)
		got.Write(buf[:n])
		if got.Len() >= w.after {
			w.once.Do(w.cancel)
		}
		if err != nil {
			break
		}
	}
	r.Body.Close()
	out, err := http.NewRequestWithContext(context.WithoutCancel(r.Context()), r.Method, r.URL.String(), &got)
	if err != nil {
		return nil, err
	}
	out.Header = r.Header.Clone()
	out.ContentLength = int64(got.Len())
	return http.DefaultTransport.RoundTrip(out)
}

// TestPutNeverTorn: a Put whose context ends while its body is on the wire
// leaves the old object or the whole new one. The client library, sending
// a body it streams (Writer.ChunkSize 0), writes the multipart body's
// closing boundary even when its source fails, so the bytes on the wire
// were a complete request holding part of the body, which the service
// stored as the object. Put sends from the library's buffer instead, whose
// source cannot fail midway.
func TestPutNeverTorn(t *testing.T) {
	endpoint := emulator(t)
	name := newBucket(t, endpoint)
	plain := gcs.New(client(t, endpoint, nil), name)
	big := bytes.Repeat([]byte("0123456789abcdef"), (4<<20)/16)
	for _, cond := range []driver.Condition{{}, driver.IfAbsent()} {
		key := "torn-" + map[bool]string{true: "absent", false: "unconditional"}[cond == driver.IfAbsent()]
		ctx, cancel := context.WithCancel(t.Context())
		b := gcs.New(client(t, endpoint, &wireOfWhatWasRead{after: 1 << 20, cancel: cancel}), name)
		_, err := b.Put(ctx, key, big, driver.PutOptions{If: cond})
		if ctx.Err() == nil {
			t.Fatalf("setup: the Put (%s) returned (%v) before 1 MiB of its body was on the wire", cond, err)
		}
		cancel()
		got, _, rerr := objects.ReadAll(t.Context(), plain, key, 64<<20, driver.GetOptions{})
		switch {
		case errors.Is(rerr, driver.ErrNotExist):
		case rerr != nil:
			t.Fatalf("Get after the cancelled Put: %v", rerr)
		case !bytes.Equal(got, big):
			t.Errorf("a Put (%s) cancelled mid-body (%v) left a torn object of %d bytes, the body was %d", cond, err, len(got), len(big))
		}
	}
}

// lostChunkReply plays a network that loses the reply to the first chunk
// of a resumable upload: the chunk reaches the service, which stores it,
// and the client sees its connection reset, so the client library sends
// the chunk again.
type lostChunkReply struct {
	mu     sync.Mutex
	n, nth int
}

func (l *lostChunkReply) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Query().Get("upload_id") == "" || r.Header.Get("Content-Range") == "" {
		return http.DefaultTransport.RoundTrip(r)
	}
	resp, err := http.DefaultTransport.RoundTrip(r)
	l.mu.Lock()
	l.n++
	lost := l.n == l.nth && err == nil
	l.mu.Unlock()
	if lost {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return nil, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	}
	return resp, err
}

// TestStreamResentChunkIsNotKept: a streamed write whose first chunk's
// reply was lost, so that the client library sent the chunk again, leaves
// either nothing or the body it was given. fake-gcs-server appends a
// resent chunk to what it holds (Cloud Storage keeps the bytes at their
// offset), and finalises the longer object: the driver compares what was
// stored with what it sent, and removes an object that differs.
func TestStreamResentChunkIsNotKept(t *testing.T) {
	endpoint := emulator(t)
	name := newBucket(t, endpoint)
	plain := gcs.New(client(t, endpoint, nil), name)
	for nth := 1; nth <= 4; nth++ {
		t.Run(fmt.Sprint("request ", nth), func(t *testing.T) {
			key := fmt.Sprint("resent-", nth)
			b := gcs.New(client(t, endpoint, &lostChunkReply{nth: nth}), name)
			want := body(3*driver.MinPartSize+17, 7)
			v, err := b.PutStream(t.Context(), key, unknownLength(want), driver.PutOptions{If: driver.IfAbsent()}, &driver.StreamOptions{PartSize: driver.MinPartSize})
			got, _, rerr := objects.ReadAll(t.Context(), plain, key, 64<<20, driver.GetOptions{})
			switch {
			case errors.Is(rerr, driver.ErrNotExist):
				if err == nil {
					t.Fatalf("the streamed write returned version %s, but no object is there", v.Version)
				}
				t.Logf("the write failed (%v) and left nothing", err)
			case rerr != nil:
				t.Fatal(rerr)
			case !bytes.Equal(got, want):
				t.Fatalf("a streamed write whose chunk was sent twice left %d bytes, the body was %d (write: %v, %v)", len(got), len(want), v.Version, err)
			case err != nil && !errors.Is(err, driver.ErrOutcomeUnknown):
				t.Fatalf("the write failed (%v), but left the whole body, and did not say that it may have landed", err)
			}
		})
	}
}
