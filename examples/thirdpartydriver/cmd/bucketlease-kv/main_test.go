package main

import (
	"bytes"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"example.com/thirdpartydriver/kvstore"
)

const token = "test-token"

// TestCommandWithTheKVDriver builds this command as its author would (go
// build, into a temporary directory) and runs the bucketlease commands
// through it on kv://, against a kvstore on loopback: probe, hold with a
// command, put, put inside hold, and get.
func TestCommandWithTheKVDriver(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command: not in -short")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bucketlease-kv")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	srv := httptest.NewServer(kvstore.New(token, "leases"))
	t.Cleanup(srv.Close)
	url := "kv://" + strings.TrimPrefix(srv.URL, "http://") + "/leases/db1?tls=false"
	env := append(os.Environ(), "KV_TOKEN="+token, "XDG_STATE_HOME="+filepath.Join(dir, "state"))

	// run runs the command with args and stdin, and returns its stdout,
	// stderr and exit code.
	run := func(stdin string, args ...string) (string, string, int) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env, cmd.Stdin = env, strings.NewReader(stdin)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if _, ok := err.(*exec.ExitError); err != nil && !ok {
			t.Fatalf("%s: %v", strings.Join(args, " "), err)
		}
		return stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()
	}
	want := func(what string, code, wantCode int, stdout, stderr string) {
		t.Helper()
		if code != wantCode {
			t.Fatalf("%s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", what, code, wantCode, stdout, stderr)
		}
	}

	// The help lists the schemes linked in: kv, and the built-in ones.
	stdout, stderr, code := run("", "help")
	want("help", code, 0, stdout, stderr)
	for _, s := range []string{"kv://", "s3://", "file://"} {
		if !strings.Contains(stdout+stderr, s) {
			t.Errorf("help lists no %s URL:\n%s%s", s, stdout, stderr)
		}
	}

	// version names this module, and the bucketlease it was built with.
	stdout, stderr, code = run("", "version")
	want("version", code, 0, stdout, stderr)
	if !strings.Contains(stdout, "module example.com/thirdpartydriver, with github.com/mushroomdb/bucketlease ") {
		t.Errorf("version printed %q, want this module and bucketlease's version", stdout)
	}

	stdout, stderr, code = run("", "probe", url)
	want("probe", code, 0, stdout, stderr)
	if !strings.Contains(stdout, "verdict:  OK") {
		t.Errorf("probe printed no OK verdict:\n%s", stdout)
	}

	// hold runs its command under the watchdog, a second process of this
	// binary, with the lease's environment.
	stdout, stderr, code = run("", "hold", url, "--", "sh", "-c", `echo "held as $BUCKETLEASE_INSTANCE_ID, epoch $BUCKETLEASE_EPOCH"`)
	want("hold -- sh", code, 0, stdout, stderr)
	if !strings.Contains(stdout, "held as ") || strings.Contains(stdout, "held as ,") {
		t.Errorf("hold's command printed %q, want its instance id", stdout)
	}

	body := "the first backup\n"
	stdout, stderr, code = run(body, "put", url, "backups/one")
	want("put", code, 0, stdout, stderr)
	version := strings.TrimSpace(stdout)
	if version == "" {
		t.Fatalf("put printed no version; stderr:\n%s", stderr)
	}

	// put inside hold hands its body to hold, which writes it under the
	// lease it holds.
	second := "the second backup\n"
	file := filepath.Join(dir, "second")
	if err := os.WriteFile(file, []byte(second), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code = run("", "hold", url, "--", bin, "put", "backups/two", file)
	want("hold -- put", code, 0, stdout, stderr)

	for key, b := range map[string]string{"backups/one": body, "backups/two": second} {
		stdout, stderr, code = run("", "get", url, key)
		want("get "+key, code, 0, stdout, stderr)
		if stdout != b {
			t.Errorf("get %s printed %q, want %q", key, stdout, b)
		}
	}
	stdout, stderr, code = run("", "get", url, "backups/one", "--version", version)
	want("get --version", code, 0, stdout, stderr)

	stdout, stderr, code = run("", "get", url, "backups/none")
	want("get of a missing key", code, 1, stdout, stderr)
}
