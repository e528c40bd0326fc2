//go:build unix

package cli

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/exitcode"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/put"
)

// getObject reads key back through the real binary's get (the file
// driver's on-disk layout is the driver's business): the bytes, and
// whether get found it.
func getObject(t *testing.T, u, key string) ([]byte, bool) {
	t.Helper()
	var out bytes.Buffer
	errOut, code := runTo(t, "", &out, nil, "get", u, key)
	switch {
	case code == 0:
		return out.Bytes(), true
	case code == exitcode.Failure && strings.Contains(errOut, "no such object"):
		return nil, false
	}
	t.Fatalf("get %s: exit %d: %s", key, code, errOut)
	return nil, false
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestPutProducerFails: put URL KEY -- COMMAND commits nothing when the
// producer exits 1 after writing 40 MB, or is killed by SIGKILL after
// writing 20 MB; it says why and exits 7. The same inside hold, where
// hold exits with its command's 7. Before the fix (a pipe into put) both
// were committed, exit 0.
func TestPutProducerFails(t *testing.T) {
	u, _ := fileURL(t)
	for _, tc := range []struct {
		name, script, why string
	}{
		{"exits 1", `head -c 40000000 /dev/urandom; exit 1`, `"sh" exited with status 1`},
		{"killed", `head -c 20000000 /dev/urandom; kill -KILL $$`, `"sh" was killed by signal SIGKILL`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "dumps/" + strings.ReplaceAll(tc.name, " ", "-")
			out, errOut, code := runCLI(t, nil, "put", u, key, "--", "sh", "-c", tc.script)
			if code != exitcode.ProducerFailed || !strings.Contains(errOut, tc.why) || !strings.Contains(errOut, "nothing was written") {
				t.Errorf("put: exit %d, want %d saying %s: %s", code, exitcode.ProducerFailed, tc.why, errOut)
			}
			if out != "" {
				t.Errorf("put printed a version: %q", out)
			}
			if got, ok := getObject(t, u, key); ok {
				t.Errorf("%s: %d bytes committed from a producer that failed", key, len(got))
			}
			// Inside hold: put KEY -- COMMAND through hold's socket.
			hkey := key + "-in-hold"
			_, errOut, code = runCLI(t, []string{"BL=" + binary}, "hold", u, "--", binary, "put", hkey, "--", "sh", "-c", tc.script)
			if code != exitcode.ProducerFailed || !strings.Contains(errOut, tc.why) {
				t.Errorf("hold -- put -- producer: exit %d, want %d: %s", code, exitcode.ProducerFailed, errOut)
			}
			if got, ok := getObject(t, u, hkey); ok {
				t.Errorf("%s: %d bytes committed through hold from a producer that failed", hkey, len(got))
			}
		})
	}
}

// TestPutProducerMistyped: a producer that is not found (the typo
// pg_dumpp) is refused with exit 127 before the lease is taken or anything
// written; one that is not executable exits 126.
func TestPutProducerMistyped(t *testing.T) {
	u, _ := fileURL(t)
	_, errOut, code := runCLI(t, nil, "put", u, "dumps/db1.sql", "--", "pg_dumpp", "db1")
	if code != 127 || !strings.Contains(errOut, `"pg_dumpp" was not found`) {
		t.Errorf("exit %d, want 127: %s", code, errOut)
	}
	if s := showJSONOf(t, u); s.State != "free" {
		t.Errorf("the lease is %q after a mistyped producer, want free (never taken)", s.State)
	}
	if _, ok := getObject(t, u, "dumps/db1.sql"); ok {
		t.Error("a mistyped producer left an object")
	}
	notExec := filepath.Join(t.TempDir(), "dump")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code = runCLI(t, nil, "put", u, "k", "--", notExec); code != 126 {
		t.Errorf("a producer that is not executable: exit %d, want 126: %s", code, errOut)
	}
	_, errOut, code = runCLI(t, []string{"BL=" + binary}, "hold", u, "--", "sh", "-c", `"$BL" put dumps/db1.sql -- pg_dumpp db1`)
	if code != 127 || !strings.Contains(errOut, `"pg_dumpp" was not found`) {
		t.Errorf("inside hold: exit %d, want 127: %s", code, errOut)
	}
	if _, ok := getObject(t, u, "dumps/db1.sql"); ok {
		t.Error("a mistyped producer inside hold left an object")
	}
}

// TestPutProducerSucceeds: a producer that exits 0 is stored byte for
// byte, on its own and inside hold; get reads it back exactly, to stdout
// and to FILE; put's SHA-256 on stderr is the bytes', and verify agrees.
func TestPutProducerSucceeds(t *testing.T) {
	u, _ := fileURL(t)
	work := t.TempDir()
	exp := filepath.Join(work, "expected")
	script := `head -c 20000000 /dev/urandom | tee "$EXP"`
	for _, tc := range []struct {
		key  string
		args []string
	}{
		{"dumps/one-shot", []string{"put", u, "dumps/one-shot", "--part-size", "5MiB", "--", "sh", "-c", script}},
		{"dumps/in-hold", []string{"hold", u, "--", binary, "put", "dumps/in-hold", "--", "sh", "-c", script}},
	} {
		out, errOut, code := runCLI(t, []string{"EXP=" + exp}, tc.args...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", tc.key, code, errOut)
		}
		want, err := os.ReadFile(exp)
		if err != nil || len(want) != 20000000 {
			t.Fatalf("expected: %d bytes, %v", len(want), err)
		}
		got, ok := getObject(t, u, tc.key)
		if !ok || !bytes.Equal(got, want) {
			t.Fatalf("%s: %d bytes read back (found %v), want the %d the producer wrote (first difference at %d)", tc.key, len(got), ok, len(want), firstDiff(got, want))
		}
		if sum := sha256Hex(want); !strings.Contains(errOut, "sha256 "+sum) {
			t.Errorf("%s: put did not print the SHA-256 %s of what it stored: %s", tc.key, sum, errOut)
		}
		if v := strings.TrimSpace(out); v == "" || !strings.Contains(errOut, "version "+v) {
			t.Errorf("%s: printed %q, stderr %q", tc.key, out, errOut)
		}
		file := filepath.Join(work, "restored")
		if _, errOut, code := runCLI(t, nil, "get", u, tc.key, file); code != 0 {
			t.Fatalf("get to FILE: exit %d: %s", code, errOut)
		}
		if b, _ := os.ReadFile(file); !bytes.Equal(b, want) {
			t.Errorf("get %s FILE: %d bytes, not the object's", tc.key, len(b))
		}
		if out, errOut, code := runCLI(t, nil, "verify", u, tc.key, "--sha256", sha256Hex(want), "--size", strconv.Itoa(len(want))); code != 0 || !strings.HasPrefix(out, "ok ") {
			t.Errorf("verify: exit %d: %s %s", code, out, errOut)
		}
	}
}

// selfPID is shell that prints the shell's own pid as the machine sees it:
// under put, where the producer may run in a PID namespace of its own, $$
// is its pid there. /proc/self, opened by the shell itself, is the
// host's; where there is no /proc there is no namespace either.
const selfPID = `{ read p _ < /proc/self/stat; } 2>/dev/null || p=$$; echo $p`

// TestPutSignalGoesToProducer: SIGINT or SIGTERM to put URL -- COMMAND
// mid-stream goes on to the producer (here a sleep that would run for
// 100 s), the upload is aborted, nothing is committed, and put exits 130
// or 143.
func TestPutSignalGoesToProducer(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			u, _ := fileURL(t)
			work := t.TempDir()
			mark, pidFile := filepath.Join(work, "wrote"), filepath.Join(work, "pid")
			p := start(t, []string{"MARK=" + mark, "PIDF=" + pidFile}, "put", u, "k", "--part-size", "5MiB", "--", "sh", "-c",
				selfPID+` > "$PIDF"; head -c 6000000 /dev/urandom; : > "$MARK"; exec sleep 100`)
			for i := 0; ; i++ {
				if _, err := os.Stat(mark); err == nil {
					break
				}
				if i > 600 {
					t.Fatalf("the producer did not write its 6 MB:\n%s", p.output())
				}
				time.Sleep(50 * time.Millisecond)
			}
			p.signal(sig)
			if code := p.wait(); code != 128+int(sig) {
				t.Errorf("put exit %d, want %d:\n%s", code, 128+int(sig), p.output())
			}
			b, _ := os.ReadFile(pidFile)
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("the producer (pid %d) outlived put: %v", pid, err)
			}
			if _, ok := getObject(t, u, "k"); ok {
				t.Error("an interrupted put committed an object")
			}
		})
	}
}

// TestPutChecksInput: --size and --sha256 check a pipe's input before the
// commit: a mismatch aborts, exit 8, nothing written; a match stores.
func TestPutChecksInput(t *testing.T) {
	u, _ := fileURL(t)
	body := bytes.Repeat([]byte("restore point\n"), 100000)
	src := filepath.Join(t.TempDir(), "body")
	if err := os.WriteFile(src, body, 0o600); err != nil {
		t.Fatal(err)
	}
	sum, size := sha256Hex(body), strconv.Itoa(len(body))
	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"short", []string{"--size", strconv.Itoa(len(body) + 1)}, exitcode.Mismatch},
		{"long", []string{"--size", strconv.Itoa(len(body) - 1)}, exitcode.Mismatch},
		{"sha256", []string{"--sha256", sha256Hex(body[1:])}, exitcode.Mismatch},
		{"producer-sha256", []string{"--sha256", sha256Hex(body[1:]), "--", "cat", src}, exitcode.Mismatch},
		{"match", []string{"--size", size, "--sha256", strings.ToUpper(sum)}, 0},
	} {
		args := append([]string{"put", u, tc.name}, tc.args...)
		if !strings.Contains(tc.name, "producer") {
			args = append([]string{"put", u, tc.name, src}, tc.args...)
		}
		_, errOut, code := runCLI(t, nil, args...)
		if code != tc.code {
			t.Errorf("%s: exit %d, want %d: %s", tc.name, code, tc.code, errOut)
		}
		got, ok := getObject(t, u, tc.name)
		if tc.code != 0 && ok {
			t.Errorf("%s: a mismatch committed %d bytes", tc.name, len(got))
		}
		if tc.code == 0 && (!ok || !bytes.Equal(got, body)) {
			t.Errorf("%s: %d bytes stored (found %v)", tc.name, len(got), ok)
		}
	}
	if _, errOut, code := runCLI(t, nil, "put", u, "x", src, "--sha256", "abc"); code != exitcode.Usage {
		t.Errorf("--sha256 abc: exit %d: %s", code, errOut)
	}
}

// TestPutRefusesExistingKeyAtOnce: under --if-absent, a key that exists is
// refused (exit 4) before the body is read: put exits while its stdin,
// a pipe, is still open and has sent nothing, on its own and inside hold;
// with a producer, put URL never starts it.
func TestPutRefusesExistingKeyAtOnce(t *testing.T) {
	u, _ := fileURL(t)
	if _, errOut, code := runCLI(t, nil, "put", u, "k", "/dev/null"); code != 0 {
		t.Fatalf("first put: exit %d: %s", code, errOut)
	}
	for _, args := range [][]string{
		{"put", u, "k"},
		{"hold", u, "--", binary, "put", "k"},
	} {
		cmd := exec.Command(binary, args...)
		cmd.Env = cleanEnv()
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		var errb bytes.Buffer
		cmd.Stdin, cmd.Stderr = pr, &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pr.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(exitTimeout):
			_ = cmd.Process.Kill()
			<-done
			t.Errorf("%v: still reading its input %v after it started, on a key that exists", args, exitTimeout)
		}
		pw.Close()
		if code := cmd.ProcessState.ExitCode(); code != exitcode.Refused || !strings.Contains(errb.String(), "exists") {
			t.Errorf("%v: exit %d, want %d: %s", args, code, exitcode.Refused, errb.String())
		}
	}
	mark := filepath.Join(t.TempDir(), "started")
	_, errOut, code := runCLI(t, []string{"MARK=" + mark}, "put", u, "k", "--", "sh", "-c", `: > "$MARK"`)
	if code != exitcode.Refused {
		t.Errorf("put -- producer on a key that exists: exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(mark); err == nil {
		t.Error("put started the producer for a key that exists")
	}
}

// TestPutUsageErrors: the key LEASE, a scratch key of the lease,
// --concurrency 0 and -1, and an empty command after -- are usage errors
// (exit 2), refused before anything is read or taken.
func TestPutUsageErrors(t *testing.T) {
	u, _ := fileURL(t)
	for _, args := range [][]string{
		{"put", u, "LEASE", "/dev/null"},
		{"put", u, "LEASE.acquire-probe-0123456789abcdef", "/dev/null"},
		{"put", u, "k", "/dev/null", "--concurrency", "0"},
		{"put", u, "k", "/dev/null", "--concurrency", "-1"},
		{"put", u, "k", "--"},
		{"put", u, "k", "/dev/null", "--", "cat"},
	} {
		if _, errOut, code := runCLI(t, nil, args...); code != exitcode.Usage {
			t.Errorf("%v: exit %d, want %d: %s", args[2:], code, exitcode.Usage, errOut)
		}
	}
	_, errOut, code := runCLI(t, []string{put.SocketEnv + "=/nonexistent/put.sock"}, "put", "LEASE", "/dev/null")
	if code != exitcode.Usage {
		t.Errorf("put LEASE inside hold: exit %d: %s", code, errOut)
	}
}

// TestPutVersionLost: a put whose stdout is a closed pipe or a full disk
// stores the object but cannot print its version: it exits 9, never 0,
// and says the object exists; get reads it back.
func TestPutVersionLost(t *testing.T) {
	u, _ := fileURL(t)
	src := filepath.Join(t.TempDir(), "body")
	if err := os.WriteFile(src, []byte("data\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip(err)
	}
	defer full.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	pr.Close() // nobody reads the version
	defer pw.Close()
	for name, w := range map[string]*os.File{"full": full, "closed-pipe": pw} {
		errOut, code := runTo(t, "", w, nil, "put", u, name, src)
		if code != exitcode.VersionLost || !strings.Contains(errOut, "was stored") {
			t.Errorf("%s: exit %d, want %d: %s", name, code, exitcode.VersionLost, errOut)
		}
		if got, ok := getObject(t, u, name); !ok || string(got) != "data\n" {
			t.Errorf("%s: %q stored (found %v)", name, got, ok)
		}
	}
}

// TestPutWaitInsideOwnHold: put URL --wait inside a hold of
// the same lease is refused at once (exit 2), saying to run put KEY,
// rather than wait forever for its own parent; a put --wait that waits for
// another holder says once, on stderr, who holds the lease.
func TestPutWaitInsideOwnHold(t *testing.T) {
	u, _ := fileURL(t)
	h := start(t, []string{"BL=" + binary, "URL=" + u}, "hold", u, "--ttl", "6s", "--", "sh", "-c", `"$BL" put "$URL" k /dev/null --wait; echo "put=$?"`)
	if code := h.wait(); code != 0 {
		t.Errorf("hold: exit %d:\n%s", code, h.output())
	}
	if !strings.Contains(h.output(), "put=2") || !strings.Contains(h.errOutput(), "without the URL") {
		t.Errorf("put URL --wait inside its own hold: want exit 2 and advice:\n%s", h.output())
	}

	a := start(t, nil, "hold", u, "--ttl", "3s", "--instance-id", "alpha")
	a.waitFor(`(acquired|took-over) .*instance alpha`)
	p := start(t, nil, "put", u, "w", "/dev/null", "--wait")
	p.waitFor(`put w: waiting for the lease: lease LEASE is held by instance alpha`)
	a.signal(syscall.SIGINT)
	if code := a.wait(); code != 0 {
		t.Errorf("alpha: exit %d", code)
	}
	if code := p.wait(); code != 0 {
		t.Errorf("put --wait: exit %d:\n%s", code, p.output())
	}
	if n := strings.Count(p.errOutput(), "waiting for the lease"); n != 1 {
		t.Errorf("put said %d times that it waits, want once:\n%s", n, p.errOutput())
	}
}

// TestGetAndVerify: get --version refuses another version (exit 4)
// without touching FILE; get of a missing key exits 1 and creates no
// FILE; verify exits 8 on a mismatch and 2 without a check.
func TestGetAndVerify(t *testing.T) {
	u, _ := fileURL(t)
	src := filepath.Join(t.TempDir(), "body")
	if err := os.WriteFile(src, []byte("twelve bytes"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(t, nil, "put", u, "k", src)
	if code != 0 {
		t.Fatalf("put: exit %d: %s", code, errOut)
	}
	v := strings.TrimSpace(out)
	file := filepath.Join(t.TempDir(), "restored")
	if err := os.WriteFile(file, []byte("old"), 0o640); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runCLI(t, nil, "get", u, "k", file, "--version", "not-"+v); code != exitcode.Refused {
		t.Errorf("get --version another: exit %d: %s", code, errOut)
	}
	if b, _ := os.ReadFile(file); string(b) != "old" {
		t.Errorf("a refused get changed FILE to %q", b)
	}
	if _, errOut, code := runCLI(t, nil, "get", u, "k", file, "--version", v); code != 0 {
		t.Errorf("get --version V: exit %d: %s", code, errOut)
	}
	if b, _ := os.ReadFile(file); string(b) != "twelve bytes" {
		t.Errorf("get wrote %q", b)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("FILE's mode after get: %v, %v; want the replaced file's 0640", fi.Mode(), err)
	}
	missing := filepath.Join(filepath.Dir(file), "missing")
	if _, errOut, code := runCLI(t, nil, "get", u, "nope", missing); code != exitcode.Failure || !strings.Contains(errOut, "no such object") {
		t.Errorf("get of a missing key: exit %d: %s", code, errOut)
	}
	if entries, _ := os.ReadDir(filepath.Dir(file)); len(entries) != 1 {
		t.Errorf("a failed get left files: %v", entries)
	}
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"--size", "12"}, 0},
		{[]string{"--size", "11"}, exitcode.Mismatch},
		{[]string{"--sha256", sha256Hex([]byte("twelve bytes"))}, 0},
		{[]string{"--sha256", sha256Hex([]byte("twelve bytez"))}, exitcode.Mismatch},
		{[]string{"--size", "12", "--version", "x"}, exitcode.Refused},
		{nil, exitcode.Usage},
	} {
		if out, errOut, code := runCLI(t, nil, append([]string{"verify", u, "k"}, tc.args...)...); code != tc.code {
			t.Errorf("verify %v: exit %d, want %d: %s%s", tc.args, code, tc.code, out, errOut)
		}
	}
}
