package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
)

// binary is the bucketlease command built once for the end-to-end tests,
// which run it as separate processes.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "bucketlease-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "bucketlease")
	// hold keeps a state directory under $XDG_STATE_HOME by default; the
	// tests' holds keep theirs here, not in the home of whoever runs them.
	os.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	out, err := exec.Command("go", "build", "-o", binary, "..").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building bucketlease: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	// The tests send SIGHUP to the commands they start. A command that
	// inherits an ignored SIGHUP (this process started under nohup) keeps
	// ignoring it, as hold does on purpose; handling it here makes the
	// commands start with the default.
	if signal.Ignored(syscall.SIGHUP) {
		signal.Notify(make(chan os.Signal, 1), syscall.SIGHUP)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// runInProcess runs a command line through run, with the environment
// getenv, and returns its output and exit code.
func runInProcess(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &env{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
	code = run(context.Background(), e, args)
	return out.String(), errb.String(), code
}
