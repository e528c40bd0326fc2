//go:build unix

package file_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/file"
	"github.com/mushroomdb/bucketlease/driver/multipart"
)

const streamHelperEnv = "BUCKETLEASE_FILE_STREAM_HELPER_DIR"

// TestStreamHelperProcess is not a test: the staged-file tests run the
// test binary again with streamHelperEnv set, and this streams its stdin
// to the key "dumps/db1.sql" through PutStream, as bucketlease put does,
// and prints the version it committed.
func TestStreamHelperProcess(t *testing.T) {
	dir := os.Getenv(streamHelperEnv)
	if dir == "" {
		t.Skip("helper process for the staged-file tests")
	}
	b, err := file.Open(dir)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(2)
	}
	v, err := b.PutStream(context.Background(), "dumps/db1.sql", os.Stdin, driver.PutOptions{If: driver.IfAbsent()}, &driver.StreamOptions{PartSize: driver.MinPartSize})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(2)
	}
	fmt.Println("version", v.Version)
	os.Exit(0)
}

// streamWriter is a helper process streaming its stdin into a bucket.
type streamWriter struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bytes.Buffer
}

// startWriter starts a helper writing to the bucket at dir, feeds it
// first, and waits (bounded) until its staged file holds all of first: it
// is then mid-write, as a put whose producer is still running.
func startWriter(t *testing.T, dir string, first []byte) *streamWriter {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestStreamHelperProcess$")
	cmd.Env = append(os.Environ(), streamHelperEnv+"="+dir)
	w := &streamWriter{cmd: cmd, out: new(bytes.Buffer)}
	cmd.Stdout, cmd.Stderr = w.out, w.out
	var err error
	if w.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if _, err := w.stdin.Write(first); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		if staged(t, dir, int64(len(first))) != "" {
			return w
		}
		if i == 6000 { // a minute
			t.Fatalf("the writer staged no file of %d bytes; it says: %s", len(first), w.out)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// staged returns the staged file in the bucket at dir holding at least
// size bytes, if there is one.
func staged(t *testing.T, dir string, size int64) string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, ".bucketlease", "tmp"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && strings.HasPrefix(e.Name(), "put-") && !strings.HasSuffix(e.Name(), ".key") && fi.Size() >= size {
			return e.Name()
		}
	}
	return ""
}

// tmpNames lists the staging directory.
func tmpNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, ".bucketlease", "tmp"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// pending lists the bucket's pending uploads under prefix.
func pending(t *testing.T, b *file.Bucket, prefix string) []multipart.Pending {
	t.Helper()
	var ps []multipart.Pending
	for p, err := range b.ListPending(context.Background(), prefix) {
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	return ps
}

// TestKilledWritersStagedFileIsSwept: a process
// killed by SIGKILL in the middle of a streamed write leaves its staged
// file; ListPending shows it, with its key, as left by a process that is
// gone; and the next write, from another process, removes it.
func TestKilledWritersStagedFileIsSwept(t *testing.T) {
	dir := t.TempDir()
	b, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	part := bytes.Repeat([]byte("x"), int(driver.MinPartSize))
	w := startWriter(t, dir, part)
	name := staged(t, dir, int64(len(part)))
	if err := w.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	w.cmd.Wait()
	if staged(t, dir, 0) != name {
		t.Fatalf("the killed writer's staged file %s is gone before any sweep: %v", name, tmpNames(t, dir))
	}
	ps := pending(t, b, "dumps/")
	if len(ps) != 1 || ps[0].Key != "dumps/db1.sql" || !strings.Contains(ps[0].Upload, name) ||
		!strings.Contains(ps[0].Upload, fmt.Sprint(w.cmd.Process.Pid)) || !strings.Contains(ps[0].Upload, "gone") || ps[0].Initiated.IsZero() {
		t.Fatalf("ListPending after the writer was killed: %+v, want its staged file %s for dumps/db1.sql, left by process %d, which is gone", ps, name, w.cmd.Process.Pid)
	}
	if ps := pending(t, b, "other/"); len(ps) != 0 {
		t.Fatalf("ListPending of another prefix: %+v", ps)
	}
	if _, err := b.Put(context.Background(), "other", []byte("next write"), driver.PutOptions{If: driver.IfAbsent()}); err != nil {
		t.Fatal(err)
	}
	if names := tmpNames(t, dir); len(names) != 0 {
		t.Fatalf("after the next write the staging directory still holds %v", names)
	}
	if ps := pending(t, b, ""); len(ps) != 0 {
		t.Fatalf("ListPending after the sweep: %+v", ps)
	}
	if _, _, err := b.Get(context.Background(), "dumps/db1.sql", driver.GetOptions{}); err == nil {
		t.Fatal("the killed writer's object exists")
	}
}

// TestLiveWritersStagedFileIsNotSwept: writes from other processes and
// goroutines never remove the staged file of a writer that is still
// writing, which then commits all it was given.
func TestLiveWritersStagedFileIsNotSwept(t *testing.T) {
	dir := t.TempDir()
	b, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	part := bytes.Repeat([]byte("y"), int(driver.MinPartSize))
	w := startWriter(t, dir, part)
	name := staged(t, dir, int64(len(part)))
	for i := range 5 {
		if _, err := b.Put(ctx, fmt.Sprintf("other-%d", i), []byte("x"), driver.PutOptions{If: driver.IfAbsent()}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.PutStream(ctx, fmt.Sprintf("streamed-%d", i), strings.NewReader("x"), driver.PutOptions{If: driver.IfAbsent()}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if staged(t, dir, int64(len(part))) != name {
		t.Fatalf("a live writer's staged file %s was removed by other writes: %v", name, tmpNames(t, dir))
	}
	ps := pending(t, b, "dumps/db1.sql")
	if len(ps) != 1 || !strings.Contains(ps[0].Upload, "being written by process "+fmt.Sprint(w.cmd.Process.Pid)) {
		t.Fatalf("ListPending of a live write: %+v, want it being written by process %d", ps, w.cmd.Process.Pid)
	}
	if _, err := w.stdin.Write([]byte("the end\n")); err != nil {
		t.Fatal(err)
	}
	w.stdin.Close()
	if err := w.cmd.Wait(); err != nil {
		t.Fatalf("the writer: %v: %s", err, w.out)
	}
	line, _ := bufio.NewReader(bytes.NewReader(w.out.Bytes())).ReadString('\n')
	v := driver.Version(strings.TrimSpace(strings.TrimPrefix(line, "version ")))
	want := append(part, "the end\n"...)
	onDisk, err := os.ReadFile(filepath.Join(dir, "dumps", "db1.sql"))
	if err != nil || !bytes.Equal(onDisk, want) {
		t.Fatalf("the live writer's object: %d bytes (%v), want the %d it was given", len(onDisk), err, len(want))
	}
	if _, gv, err := b.Get(ctx, "dumps/db1.sql", driver.GetOptions{}); err != nil || gv.Version != v {
		t.Fatalf("the live writer's object reads at %q (%v), want the version it printed, %q", gv.Version, err, v)
	}
	if names := tmpNames(t, dir); len(names) != 0 {
		t.Fatalf("after the writer committed, the staging directory holds %v", names)
	}
}

// TestLiveWriterInThisProcess: a write from the same process (another
// goroutine) never removes the staged file of a PutStream still reading
// its body: locks are taken per open file, not per process.
func TestLiveWriterInThisProcess(t *testing.T) {
	dir := t.TempDir()
	b, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pr, pw := io.Pipe()
	type result struct {
		v   driver.Version
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := b.PutStream(ctx, "k", pr, driver.PutOptions{If: driver.IfAbsent()}, nil)
		done <- result{v.Version, err}
	}()
	for i := 0; staged(t, dir, 0) == ""; i++ {
		if i == 6000 {
			t.Fatal("the PutStream staged no file within a minute")
		}
		time.Sleep(10 * time.Millisecond)
	}
	name := staged(t, dir, 0)
	if _, err := b.Put(ctx, "other", []byte("x"), driver.PutOptions{If: driver.IfAbsent()}); err != nil {
		t.Fatal(err)
	}
	if staged(t, dir, 0) != name {
		t.Fatalf("a write from the same process removed a live PutStream's staged file %s: %v", name, tmpNames(t, dir))
	}
	io.WriteString(pw, "body")
	pw.Close()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if onDisk, err := os.ReadFile(filepath.Join(dir, "k")); err != nil || string(onDisk) != "body" {
		t.Fatalf("the object holds %q (%v), want %q", onDisk, err, "body")
	}
}
