//go:build unix

package put

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/clock"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/mem"
	"github.com/mushroomdb/bucketlease/internal/leaseseam"
	"github.com/mushroomdb/bucketlease/lease"
)

// putOnce sends one upload to the socket: the header, the chunks, the end
// chunk if end, and returns hold's answer.
func putOnce(t *testing.T, sock string, h Header, chunks []string, end bool) string {
	t.Helper()
	conn, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	line, err := jsonLine(h)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write([]byte(magic + " " + line)); err != nil {
		t.Fatal(err)
	}
	for _, c := range chunks {
		if err := writeChunk(conn, []byte(c)); err != nil {
			t.Fatal(err)
		}
	}
	if end {
		if err := writeChunk(conn, nil); err != nil {
			t.Fatal(err)
		}
	}
	_ = conn.CloseWrite()
	reply, _ := bufio.NewReader(conn).ReadString('\n')
	return reply
}

// TestPutServe: hold's side of the protocol. A body that ends without its
// end chunk (a client killed mid-body) is aborted, never stored truncated;
// a complete one is stored under the lease's prefix and answered "ok";
// the same key again is a precondition refusal; a bad header is a usage
// error; stopping removes the socket's directory and the variable.
func TestPutServe(t *testing.T) {
	ctx := context.Background()
	b := mem.New()
	c, err := lease.NewContender(bucket.New(b, "db1"), leaseseam.With(&lease.Options{Logger: slog.New(slog.DiscardHandler)}, leaseseam.Seams{Getenv: func(string) string { return "" }}))
	if err != nil {
		t.Fatal(err)
	}
	l, err := c.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	stop, err := Serve(l)
	if err != nil {
		t.Fatal(err)
	}
	sock := os.Getenv(SocketEnv)
	if st, err := os.Stat(filepath.Dir(sock)); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("the socket's directory: %v, %v; want 0700", st, err)
	}
	h := Header{Key: "chunks/1", Cond: "if-absent"}
	if r := putOnce(t, sock, h, []string{"half of "}, false); !strings.HasPrefix(r, "error error ") || !strings.Contains(r, "went away") {
		t.Errorf("a truncated body: %q", r)
	}
	if _, _, err := b.Get(ctx, "db1/chunks/1", driver.GetOptions{}); err == nil {
		t.Fatal("a truncated body was stored")
	}
	if r := putOnce(t, sock, h, []string{"all ", "of it"}, true); !strings.HasPrefix(r, "ok ") {
		t.Fatalf("a complete body: %q", r)
	}
	rc, _, err := b.Get(ctx, "db1/chunks/1", driver.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	_, _ = bufio.NewReader(rc).WriteTo(&sb)
	rc.Close()
	if sb.String() != "all of it" {
		t.Errorf("stored %q", sb.String())
	}
	if r := putOnce(t, sock, h, []string{"again"}, true); !strings.HasPrefix(r, "error precondition ") {
		t.Errorf("the same key again: %q", r)
	}
	if r := putOnce(t, sock, Header{Key: "chunks/2", Cond: "if-match"}, nil, true); !strings.HasPrefix(r, "error usage ") {
		t.Errorf("if-match without a version: %q", r)
	}
	if r := putOnce(t, sock, Header{Key: "LEASE", Cond: "overwrite"}, []string{"x"}, true); !strings.HasPrefix(r, "error ") {
		t.Errorf("a write to the lease object itself: %q", r)
	}
	stop()
	if _, err := os.Stat(filepath.Dir(sock)); !os.IsNotExist(err) {
		t.Errorf("the socket's directory is still there: %v", err)
	}
	if v, ok := os.LookupEnv(SocketEnv); ok {
		t.Errorf("%s=%s is still set", SocketEnv, v)
	}
}

// answerAfterFence is a bucket whose Put of key stores the object and
// then, before it answers, lets the lease's clock pass its fence: a hold
// paused, or a reply held up, while the write was on the way.
type answerAfterFence struct {
	driver.Bucket
	key string
	clk *clock.Fake
	ttl time.Duration
}

func (a answerAfterFence) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	at, err := a.Bucket.Put(ctx, key, data, opts)
	if key == a.key {
		a.clk.Advance(a.ttl)
	}
	return at, err
}

// PutStream stores the object as Put does, and lets the clock pass the
// fence before it answers, as Put does.
func (a answerAfterFence) PutStream(ctx context.Context, key string, r io.Reader, opts driver.PutOptions, s *driver.StreamOptions) (driver.Attrs, error) {
	at, err := a.Bucket.PutStream(ctx, key, r, opts, s)
	if key == a.key {
		a.clk.Advance(a.ttl)
	}
	return at, err
}

// TestPutServeLateAnswer: a write through hold whose answer came only
// after the lease was fenced is answered "late" with its version, and put
// exits 11 (stored, perhaps late: a LateError), never 0.
func TestPutServeLateAnswer(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(time.Now())
	const ttl = 30 * time.Second
	b := answerAfterFence{Bucket: mem.New(), key: "db1/chunks/late", clk: clk, ttl: ttl}
	// The fake clock moves a millisecond at a time while the lease is
	// taken (an acquire waits for the clock to move on past its answers),
	// and stands still after.
	taken := make(chan struct{})
	go func() {
		for {
			select {
			case <-taken:
				return
			case <-time.After(time.Millisecond):
				clk.Advance(time.Millisecond)
			}
		}
	}()
	l, err := lease.Acquire(ctx, bucket.New(b, "db1"), leaseseam.With(&lease.Options{TTL: ttl, Logger: slog.New(slog.DiscardHandler)}, leaseseam.Seams{Clock: clk, Getenv: func(string) string { return "" }}))
	close(taken)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	stop, err := Serve(l)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	reply := putOnce(t, os.Getenv(SocketEnv), Header{Key: "chunks/late", Cond: "if-absent"}, []string{"sent in time"}, true)
	if !strings.HasPrefix(reply, "late ") {
		t.Fatalf("hold answered %q; want late and the version", reply)
	}
	v, err := parseReply("chunks/late", reply)
	var late *LateError
	if v == "" || !errors.As(err, &late) || !errors.Is(err, lease.ErrFenced) {
		t.Fatalf("put's outcome: version %q, %v; want the version and a LateError", v, err)
	}
}
