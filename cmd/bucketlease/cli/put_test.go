//go:build unix

package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/exitcode"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/put"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/file"
)

// readObject reads key from the file:// store in dir.
func readObject(t *testing.T, dir, key string) ([]byte, driver.Version, bool) {
	t.Helper()
	b, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	rc, a, err := b.Get(context.Background(), key, driver.GetOptions{})
	if err != nil {
		return nil, "", false
	}
	v := a.Version
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return data, v, true
}

// staged lists what the file driver has staged and not committed.
func staged(t *testing.T, dir string) []string {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(dir, ".bucketlease", "tmp", "*"))
	return names
}

// TestPutInsideHold: a command under hold pipes 20 MiB of random bytes
// into "bucketlease put chunks/1": the object is byte-exact and put prints
// its version; a second put of the same key (If-None-Match: *, the
// default) is refused with exit 4 and leaves the first as it was; hold
// removes its socket directory at exit.
func TestPutInsideHold(t *testing.T) {
	u, dir := fileURL(t)
	work := t.TempDir()
	script := `head -c 20971520 /dev/urandom | tee expected | "$BL" put chunks/1 > version; echo "put=$?";` +
		` "$BL" put chunks/1 expected; echo "again=$?"; echo "sock=$BUCKETLEASE_PUT_SOCKET"`
	cmd := exec.Command(binary, "hold", u, "--ttl", "5s", "--", "sh", "-c", script)
	cmd.Dir = work
	cmd.Env = append(cleanEnv(), "BL="+binary)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("hold: %v\n%s\n%s", err, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "put=0") || !strings.Contains(out.String(), "again=4") {
		t.Errorf("want put=0 and again=4:\n%s\n%s", out.String(), errb.String())
	}
	if !strings.Contains(errb.String(), "precondition failed") {
		t.Errorf("the refused put does not say why:\n%s", errb.String())
	}
	want, err := os.ReadFile(filepath.Join(work, "expected"))
	if err != nil || len(want) != 20<<20 {
		t.Fatalf("expected: %d bytes, %v", len(want), err)
	}
	got, v, ok := readObject(t, dir, "chunks/1")
	if !ok || !bytes.Equal(got, want) {
		t.Fatalf("chunks/1: %d bytes (found %v), want the %d piped in (first difference at %d)", len(got), ok, len(want), firstDiff(got, want))
	}
	printed, _ := os.ReadFile(filepath.Join(work, "version"))
	if strings.TrimSpace(string(printed)) != string(v) {
		t.Errorf("put printed %q, the object's version is %q", printed, v)
	}
	for _, l := range strings.Split(out.String(), "\n") {
		if sock, ok := strings.CutPrefix(l, "sock="); ok {
			if sock == "" {
				t.Error("the command had no BUCKETLEASE_PUT_SOCKET")
			} else if _, err := os.Stat(filepath.Dir(sock)); !os.IsNotExist(err) {
				t.Errorf("hold left its socket directory %s: %v", filepath.Dir(sock), err)
			}
		}
	}
	if s := staged(t, dir); len(s) > 0 {
		t.Errorf("left staged: %v", s)
	}
	// The socket is a file: it is reached from the command's PID
	// namespace, where there is one.
	t.Logf("the command ran %s", map[bool]string{true: "in a new PID namespace", false: "without a PID namespace"}[strings.Contains(errb.String(), "PID namespace")])
}

// TestPutInsideHoldWithoutPIDNamespace: the same with hold
// --pid-namespace=false, where the command runs in a session of its own.
func TestPutInsideHoldWithoutPIDNamespace(t *testing.T) {
	u, dir := fileURL(t)
	out, errOut, code := runCLI(t, []string{"BL=" + binary}, "hold", u, "--pid-namespace=false", "--", "sh", "-c", `echo small | "$BL" put k`)
	if code != 0 {
		t.Fatalf("hold: exit %d\n%s\n%s", code, out, errOut)
	}
	got, v, ok := readObject(t, dir, "k")
	if !ok || string(got) != "small\n" || strings.TrimSpace(out) != string(v) {
		t.Errorf("k: %q (found %v), printed %q, version %q", got, ok, out, v)
	}
}

// TestPutOutsideHoldIsUsage: put KEY without a hold to talk to is a usage
// error that says what to do; a lease flag is refused inside hold.
func TestPutOutsideHoldIsUsage(t *testing.T) {
	_, errOut, code := runCLI(t, []string{put.SocketEnv + "="}, "put", "chunks/1", "/dev/null")
	if code != exitcode.Usage || !strings.Contains(errOut, "bucketlease put URL chunks/1") {
		t.Errorf("exit %d: %s", code, errOut)
	}
	_, errOut, code = runCLI(t, []string{put.SocketEnv + "=/nonexistent/put.sock"}, "put", "chunks/1", "/dev/null", "--wait")
	if code != exitcode.Usage || !strings.Contains(errOut, "--wait is for put URL") {
		t.Errorf("--wait inside hold: exit %d: %s", code, errOut)
	}
	_, errOut, code = runCLI(t, []string{put.SocketEnv + "=/nonexistent/put.sock"}, "put", "chunks/1", "/dev/null")
	if code != exitcode.Failure || !strings.Contains(errOut, "cannot reach the hold") {
		t.Errorf("no hold on the socket: exit %d: %s", code, errOut)
	}
}

// TestPutOneShotWait: put URL KEY FILE takes the lease itself. While
// another instance holds it, put without --wait exits 3 and writes
// nothing; with --wait it stores the file once the holder released, prints
// the version and releases; a second put of the key exits 4.
func TestPutOneShotWait(t *testing.T) {
	u, dir := fileURL(t)
	body := make([]byte, 7<<20)
	rand.Read(body)
	src := filepath.Join(t.TempDir(), "body")
	if err := os.WriteFile(src, body, 0o600); err != nil {
		t.Fatal(err)
	}
	a := start(t, nil, "hold", u, "--ttl", "3s", "--instance-id", "alpha")
	a.waitFor(`acquired\s+acquired lease LEASE as instance alpha`)

	_, errOut, code := runCLI(t, nil, "put", u, "db/1", src)
	if code != exitcode.Held || !strings.Contains(errOut, "alpha") {
		t.Errorf("put while held, without --wait: exit %d: %s", code, errOut)
	}
	if _, _, ok := readObject(t, dir, "db/1"); ok {
		t.Error("a refused put wrote the object")
	}
	p := start(t, nil, "put", u, "db/1", src, "--wait", "-v", "--part-size", "5MiB", "--concurrency", "2")
	p.waitFor(`held by instance alpha`) // it waits
	a.signal(syscall.SIGINT)
	if code := a.wait(); code != 0 {
		t.Errorf("alpha exit %d", code)
	}
	if code := p.wait(); code != 0 {
		t.Fatalf("put --wait: exit %d", code)
	}
	got, v, ok := readObject(t, dir, "db/1")
	if !ok || !bytes.Equal(got, body) {
		t.Fatalf("db/1: %d bytes (found %v), want %d", len(got), ok, len(body))
	}
	if !strings.Contains("\n"+p.output()+"\n", "\n"+string(v)+"\n") {
		t.Errorf("put printed %q, the object's version is %q", p.output(), v)
	}
	if s := showJSONOf(t, u); s.State != "released" && s.State != "free" {
		t.Errorf("after put the lease is %q, want released", s.State)
	}
	_, errOut, code = runCLI(t, nil, "put", u, "db/1", src)
	if code != exitcode.Refused || !strings.Contains(errOut, "precondition failed") {
		t.Errorf("second put: exit %d: %s", code, errOut)
	}
	stdout, errOut, code := runCLI(t, nil, "put", u, "db/1", src, "--if-match", string(v))
	if code != 0 || strings.TrimSpace(stdout) == string(v) || !strings.HasPrefix(errOut, "put db/1: stored ") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("put --if-match the version: exit %d, printed %q, stderr %q (no terminal: no progress, only the line that says what was stored)", code, stdout, errOut)
	}
}

// TestPutFencedMidUpload: put URL streams from a fifo whose writer stalls
// after 6 MiB (one 5 MiB part staged); put is stopped past its fence
// (TTL 3s: the fence is at 2s) and continued: the stalled read is cut
// off, the upload aborted, put exits 124 saying what it read back, and no object and nothing
// staged is left, although the writer still holds the fifo open.
func TestPutFencedMidUpload(t *testing.T) {
	u, dir := fileURL(t)
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	p := start(t, nil, "put", u, "chunks/f", fifo, "--ttl", "6s", "--part-size", "5MiB", "--concurrency", "1")
	w := openFifoWriter(t, fifo, p)
	defer w.Close()
	chunk := make([]byte, 6<<20)
	rand.Read(chunk)
	if _, err := w.Write(chunk); err != nil {
		t.Fatal(err)
	}
	for i := 0; len(staged(t, dir)) == 0; i++ { // the first part is being written
		if i > 600 {
			t.Fatal("nothing staged after 6 MiB")
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.signal(syscall.SIGSTOP)
	time.Sleep(6500 * time.Millisecond) // past the fence (4s), and the TTL
	p.signal(syscall.SIGCONT)
	if code := p.wait(); code != exitcode.LeaseEnded {
		t.Errorf("put exit %d, want %d\n%s", code, exitcode.LeaseEnded, p.output())
	}
	if !strings.Contains(p.errOutput(), "abort") {
		t.Errorf("put does not say the upload was aborted:\n%s", p.errOutput())
	}
	// It cannot know that no request of its own is still on the way: it
	// says what it saw, and where a late landing would show (mutant
	// put-fenced-claims-nothing-written).
	if !strings.Contains(p.errOutput(), "when put read it back") || !strings.Contains(p.errOutput(), "list --late") {
		t.Errorf("put's 124 claims more than it knows (no read-back, no list --late):\n%s", p.errOutput())
	}
	if _, _, ok := readObject(t, dir, "chunks/f"); ok {
		t.Error("a fenced put left an object")
	}
	if s := staged(t, dir); len(s) > 0 {
		t.Errorf("a fenced put left staged: %v", s)
	}
}

// TestPutInsideHoldFenced: hold is stopped past its fence while its
// command's put streams from a stalled fifo: the watchdog kills the
// command, hold (continued) aborts the upload, exits 124, and leaves no
// object and nothing staged.
func TestPutInsideHoldFenced(t *testing.T) {
	u, dir := fileURL(t)
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	h := start(t, []string{"BL=" + binary, "FIFO=" + fifo}, "hold", u, "--ttl", "6s", "--", "sh", "-c", `"$BL" put chunks/h --part-size 5MiB --concurrency 1 < "$FIFO"`)
	w := openFifoWriter(t, fifo, h)
	defer w.Close()
	chunk := make([]byte, 6<<20)
	rand.Read(chunk)
	if _, err := w.Write(chunk); err != nil {
		t.Fatal(err)
	}
	for i := 0; len(staged(t, dir)) == 0; i++ {
		if i > 600 {
			t.Fatal("nothing staged after 6 MiB")
		}
		time.Sleep(50 * time.Millisecond)
	}
	h.signal(syscall.SIGSTOP)
	time.Sleep(6500 * time.Millisecond) // past the fence (4s), and the TTL
	h.signal(syscall.SIGCONT)
	if code := h.wait(); code != exitcode.LeaseEnded {
		t.Errorf("hold exit %d, want %d", code, exitcode.LeaseEnded)
	}
	if _, _, ok := readObject(t, dir, "chunks/h"); ok {
		t.Error("a fenced put left an object")
	}
	if s := staged(t, dir); len(s) > 0 {
		t.Errorf("a fenced put left staged: %v", s)
	}
}

// openFifoWriter opens fifo for writing once p (or its command) has opened
// it for reading; it fails the test, with p's output, if p exits first or
// nothing reads within exitTimeout, rather than block forever.
func openFifoWriter(t *testing.T, fifo string, p *proc) *os.File {
	t.Helper()
	deadline := time.Now().Add(exitTimeout)
	for {
		fd, err := syscall.Open(fifo, syscall.O_WRONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
		if err == nil {
			if err := syscall.SetNonblock(fd, false); err != nil {
				t.Fatal(err)
			}
			return os.NewFile(uintptr(fd), fifo)
		}
		if err != syscall.ENXIO { // ENXIO: no reader yet
			t.Fatal(err)
		}
		select {
		case <-p.exited:
			t.Fatalf("bucketlease exited before it read %s:\n%s", fifo, p.output())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing opened %s for reading within %v:\n%s", fifo, exitTimeout, p.output())
		}
		time.Sleep(20 * time.Millisecond)
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
