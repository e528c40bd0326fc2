//go:build unix

package main

import (
	"bufio"
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mushroomdb/bucketlease/driver/mem"
	"github.com/mushroomdb/bucketlease/lease"
)

// putOnce sends one upload to the socket: the header, the chunks, the end
// chunk if end, and returns hold's answer.
func putOnce(t *testing.T, sock string, h putHeader, chunks []string, end bool) string {
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
	if _, err := conn.Write([]byte(putMagic + " " + line)); err != nil {
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
	c, err := lease.NewContender(b, "db1", &lease.Options{Getenv: func(string) string { return "" }, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	l, err := c.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	stop, err := servePut(l)
	if err != nil {
		t.Fatal(err)
	}
	sock := os.Getenv(putSocketEnv)
	if st, err := os.Stat(filepath.Dir(sock)); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("the socket's directory: %v, %v; want 0700", st, err)
	}
	h := putHeader{Key: "chunks/1", Cond: "if-absent"}
	if r := putOnce(t, sock, h, []string{"half of "}, false); !strings.HasPrefix(r, "error error ") || !strings.Contains(r, "went away") {
		t.Errorf("a truncated body: %q", r)
	}
	if _, _, err := b.Get(ctx, "db1/chunks/1"); err == nil {
		t.Fatal("a truncated body was stored")
	}
	if r := putOnce(t, sock, h, []string{"all ", "of it"}, true); !strings.HasPrefix(r, "ok ") {
		t.Fatalf("a complete body: %q", r)
	}
	rc, _, err := b.Get(ctx, "db1/chunks/1")
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
	if r := putOnce(t, sock, putHeader{Key: "chunks/2", Cond: "if-match"}, nil, true); !strings.HasPrefix(r, "error usage ") {
		t.Errorf("if-match without a version: %q", r)
	}
	if r := putOnce(t, sock, putHeader{Key: "LEASE", Cond: "overwrite"}, []string{"x"}, true); !strings.HasPrefix(r, "error ") {
		t.Errorf("a write to the lease object itself: %q", r)
	}
	stop()
	if _, err := os.Stat(filepath.Dir(sock)); !os.IsNotExist(err) {
		t.Errorf("the socket's directory is still there: %v", err)
	}
	if v, ok := os.LookupEnv(putSocketEnv); ok {
		t.Errorf("%s=%s is still set", putSocketEnv, v)
	}
}

// TestPutNoCredentialPrinted: put URL redacts the URL as the other
// commands do.
func TestPutNoCredentialPrinted(t *testing.T) {
	for _, u := range []string{
		"ftp://user:hunter2secret@host/p",
		"s3://bucket/p?region=us-east-1&secret_key=hunter2secret",
		"file://user:hunter2secret@elsewhere/tmp/x",
		"mem://b/p?token=hunter2secret",
	} {
		out, errOut, code := runInProcess(t, "put", u, "k", "/dev/null")
		if code == 0 {
			t.Errorf("put %s: exit 0, want an error", u)
		}
		if strings.Contains(out+errOut, "hunter2secret") {
			t.Errorf("put %s printed the secret:\n%s%s", u, out, errOut)
		}
	}
}
