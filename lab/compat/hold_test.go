package compat

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/internal/testsupport/miniotest"
)

// RcloneVar names the rclone binary scripts/compat built; TestRcloneUnderHold
// runs only when it is set.
const RcloneVar = "BUCKETLEASE_COMPAT_RCLONE"

// TestRcloneUnderHold runs a real tool under `bucketlease hold` against
// MinIO: two `hold --wait -- rclone copy` runs started together serialize
// (their run windows, from their own logs, do not overlap), a run whose
// lease is overwritten by another process is stopped within TTL/3 with exit
// 124, and what rclone copied is intact. scripts/compat runs it with the
// rclone it built; without that it is skipped.
func TestRcloneUnderHold(t *testing.T) {
	rclone := os.Getenv(RcloneVar)
	if rclone == "" {
		t.Skip("skipped: " + RcloneVar + " is unset; scripts/compat builds rclone and runs this test")
	}
	srv := miniotest.Env(t)
	bucket := srv.NewBucket(t)
	dir := t.TempDir()
	bl := filepath.Join(dir, "bucketlease")
	if out, err := exec.Command("go", "build", "-o", bl, "../../cmd/bucketlease").CombinedOutput(); err != nil {
		t.Fatalf("building bucketlease: %v\n%s", err, out)
	}
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		data := make([]byte, 256<<10)
		rand.Read(data)
		if err := os.WriteFile(filepath.Join(src, fmt.Sprintf("chunk-%d", i)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// rclone reaches MinIO through a remote named dst, configured in its
	// environment; bucketlease through the minio driver's variables.
	env := append(os.Environ(),
		"RCLONE_CONFIG="+filepath.Join(dir, "rclone.conf"),
		"RCLONE_CONFIG_DST_TYPE=s3", "RCLONE_CONFIG_DST_PROVIDER=Minio",
		"RCLONE_CONFIG_DST_ENDPOINT="+srv.URL(), "RCLONE_CONFIG_DST_REGION="+miniotest.Region,
		"RCLONE_CONFIG_DST_ACCESS_KEY_ID="+srv.AccessKey, "RCLONE_CONFIG_DST_SECRET_ACCESS_KEY="+srv.SecretKey,
		"MINIO_ACCESS_KEY="+srv.AccessKey, "MINIO_SECRET_KEY="+srv.SecretKey,
	)
	if err := os.WriteFile(filepath.Join(dir, "rclone.conf"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	leaseURL := func(name string) string {
		return "minio://" + srv.Addr + "/" + bucket + "/" + name + "?tls=false"
	}
	// copyCmd is the command under hold: rclone copy, bracketed by its own
	// start and end stamps in logFile.
	copyCmd := func(dest, logFile, after string) string {
		return fmt.Sprintf(`echo "start $(date +%%s.%%N)" >>%q; %q copy %q %q; rc=$?; echo "end $(date +%%s.%%N)" >>%q; %s exit $rc`,
			logFile, rclone, src, "dst:"+bucket+"/"+dest, logFile, after)
	}
	check := func(dest string) {
		t.Helper()
		cmd := exec.Command(rclone, "check", src, "dst:"+bucket+"/"+dest)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("rclone check of %s: %v\n%s", dest, err, out)
		}
	}

	t.Run("two-runs-serialize", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
		defer cancel()
		var wg sync.WaitGroup
		logs := map[string]string{}
		errs := map[string]error{}
		var mu sync.Mutex
		for _, id := range []string{"a", "b"} {
			logs[id] = filepath.Join(dir, "run-"+id+".log")
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Each run holds the lease a while after its copy, so that
				// the other one has to wait for the release.
				cmd := exec.CommandContext(ctx, bl, "hold", leaseURL("serialize"), "--wait", "--ttl", "3s",
					"--instance-id", "run-"+id, "--", "sh", "-c", copyCmd("data-"+id, logs[id], "sleep 2;"))
				cmd.Env = env
				out, err := cmd.CombinedOutput()
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs[id] = fmt.Errorf("%v\n%s", err, out)
				}
			}()
		}
		wg.Wait()
		for id, err := range errs {
			t.Fatalf("run %s: %v", id, err)
		}
		a, b := window(t, logs["a"]), window(t, logs["b"])
		if a[0] < b[1] && b[0] < a[1] {
			t.Errorf("the runs overlapped: a ran %v, b ran %v", a, b)
		}
		check("data-a")
		check("data-b")
	})

	t.Run("overwritten-lease-stops-the-run", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
		defer cancel()
		const ttl = 3 * time.Second
		logFile := filepath.Join(dir, "run-c.log")
		cmd := exec.CommandContext(ctx, bl, "hold", leaseURL("overwrite"), "--json", "--ttl", "3s", "--grace", "1s",
			"--instance-id", "run-c", "--", "sh", "-c", copyCmd("data-c", logFile, "sleep 120;"))
		cmd.Env = env
		// With a command, hold's events go to stderr (stdout is the
		// command's).
		pipe, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr syncBuffer
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		events := make(chan string, 1024)
		go func() {
			defer close(events)
			sc := bufio.NewScanner(pipe)
			for sc.Scan() {
				stderr.Write(append(sc.Bytes(), '\n'))
				var e struct{ Event string }
				if json.Unmarshal(sc.Bytes(), &e) == nil && e.Event != "" {
					events <- e.Event
				}
			}
		}()
		// Wait until rclone's copy has ended (the command then sleeps).
		deadline := time.Now().Add(time.Minute)
		for {
			if data, _ := os.ReadFile(logFile); strings.Contains(string(data), "end ") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the copy under hold did not finish within a minute; hold said: %s", stderr.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
		// Another process overwrites the lease: bucketlease break, with the
		// version it reads.
		show := exec.Command(bl, "show", leaseURL("overwrite"), "--json")
		show.Env = env
		out, err := show.Output()
		if err != nil {
			t.Fatalf("show: %v", err)
		}
		var st struct{ Version string }
		if err := json.Unmarshal(out, &st); err != nil || st.Version == "" {
			t.Fatalf("show --json: %v: %s", err, out)
		}
		brk := exec.Command(bl, "break", leaseURL("overwrite"), "--version", st.Version, "--force")
		brk.Env = env
		if out, err := brk.CombinedOutput(); err != nil {
			t.Fatalf("break: %v\n%s", err, out)
		}
		broke := time.Now()
		// Read every event before Wait, which closes the pipe.
		var seen []string
		for e := range events {
			seen = append(seen, e)
		}
		err = cmd.Wait()
		stopped := time.Since(broke)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 124 {
			t.Fatalf("hold ended with %v; want exit 124; events %q; stderr: %s", err, seen, stderr.String())
		}
		if !slices.Contains(seen, "lost") {
			t.Errorf("hold reported no lost event; events %q", seen)
		}
		// Lost at the next renewal (TTL/3), then SIGTERM; some slack for a
		// loaded machine.
		if limit := ttl/3 + 2*time.Second; stopped > limit {
			t.Errorf("hold stopped %v after the lease was overwritten; want within TTL/3 (+2s slack) = %v", stopped, limit)
		}
		t.Logf("hold exited 124 %v after the lease was overwritten; events %q", stopped.Round(time.Millisecond), seen)
		check("data-c")
	})
}

// window reads a run's start and end stamps from its log.
func window(t *testing.T, logFile string) [2]float64 {
	t.Helper()
	data, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	var w [2]float64
	var seen [2]bool
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		word, stamp, _ := strings.Cut(line, " ")
		v, err := strconv.ParseFloat(stamp, 64)
		if err != nil {
			t.Fatalf("%s: bad line %q", logFile, line)
		}
		switch word {
		case "start":
			w[0], seen[0] = v, true
		case "end":
			w[1], seen[1] = v, true
		}
	}
	if !seen[0] || !seen[1] {
		t.Fatalf("%s lacks a start or an end: %q", logFile, data)
	}
	return w
}

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
