//go:build linux

package supervise

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain runs the test binary as the watchdog when a test starts it so.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == WatchdogName {
		os.Exit(RunWatchdog(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// startSh starts sh -c script as a producer under the test binary's
// watchdog, without a PID namespace.
func startSh(t *testing.T, script string) *Producer {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p, err := StartProducer(self, "/bin/sh", []string{"sh", "-c", script}, &bytes.Buffer{}, false)
	if err != nil {
		t.Fatalf("starting %q: %v", script, err)
	}
	t.Cleanup(func() { p.Stop(0) })
	return p
}

func TestProducerOutputAndStatus(t *testing.T) {
	for _, tc := range []struct {
		script, want string
	}{
		{"echo hello", ""},
		{"echo hello; exit 3", `"sh" exited with status 3`},
		{"echo hello; kill -TERM $$", `"sh" was killed by signal SIGTERM`},
	} {
		p := startSh(t, tc.script)
		out, err := io.ReadAll(p.Output())
		if err != nil || string(out) != "hello\n" {
			t.Errorf("%q: output %q, %v; want \"hello\\n\"", tc.script, out, err)
		}
		err = p.Wait()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: Wait() = %v, want nil", tc.script, err)
		case tc.want != "" && (!errors.Is(err, ErrProducerFailed) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: Wait() = %v, want ErrProducerFailed saying %s", tc.script, err, tc.want)
		}
	}
}

func TestProducerNotFound(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	_, err = StartProducer(self, "/nonexistent/producer", []string{"producer"}, &bytes.Buffer{}, false)
	var se *StartError
	if !errors.As(err, &se) || se.Code != 127 {
		t.Fatalf("StartProducer of a missing program = %v, want a StartError with code 127", err)
	}
}

// TestProducerStopKillsWhatItLeft: Stop ends the producer and a process
// it left running in the background, even one that ignores SIGTERM.
func TestProducerStopKillsWhatItLeft(t *testing.T) {
	p := startSh(t, `sh -c 'trap "" TERM; exec sleep 300' </dev/null >/dev/null 2>&1 & echo $!; exec sleep 300`)
	line, err := bufio.NewReader(p.Output()).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the background pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	start := time.Now()
	p.Stop(200 * time.Millisecond)
	if st := procStat(strconv.Itoa(pid)); st != "" && st != "Z" && st != "X" {
		t.Fatalf("pid %d, left running by the producer, still runs (state %s) after Stop", pid, st)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Stop took %v", d)
	}
}

func TestParseReport(t *testing.T) {
	r, ok := parseReport("@1000000000 exited 3 exited with status 3")
	if !ok || !r.At.Equal(time.Unix(1, 0)) || len(r.Fields) != 3 || r.Fields[0] != "exited" || r.Fields[2] != "exited with status 3" {
		t.Errorf("parseReport = %+v, %v", r, ok)
	}
	for _, bad := range []string{"", "exited 3", "@x clean"} {
		if _, ok := parseReport(bad); ok {
			t.Errorf("parseReport(%q) ok", bad)
		}
	}
}
