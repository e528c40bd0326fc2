package bench

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/internal/testsupport/miniotest"
)

// BenchmarkStreamPut measures what a backup sidecar runs: "bucketlease
// put minio://…/stream KEY" reading $BUCKETLEASE_BENCH_STREAM_SIZE (default
// 64 MiB; scripts/bench passes 1GiB) from a pipe, at its default part size
// and concurrency, against lab/bench/cmd/sdkput, which streams the same
// pipe with minio-go's PutObject in 16 MiB parts, alternating in one
// loop on the same MinIO (one round is one upload of each). It reports
// each side's median peak resident set (cmd-rss-MiB, sdk-rss-MiB: the
// process's maxrss; cmd-anon-MiB, sdk-anon-MiB: the peak of its
// anonymous part, sampled from /proc every 20 ms where there is one,
// which leaves out the pages of the executable) and throughput (cmd-MiB/s, sdk-MiB/s), and the
// target: a command within 64 MiB resident.
func BenchmarkStreamPut(b *testing.B) {
	size, err := envSize(EnvStreamSize, 64<<20)
	if err != nil {
		b.Fatal(err)
	}
	srv := miniotest.Env(b)
	bucket := minioBucket(b, srv)
	dir := b.TempDir()
	cmdBin, sdkBin := filepath.Join(dir, "bucketlease"), filepath.Join(dir, "sdkput")
	for bin, pkg := range map[string]string{cmdBin: "github.com/mushroomdb/bucketlease/cmd/bucketlease", sdkBin: "github.com/mushroomdb/bucketlease/lab/bench/cmd/sdkput"} {
		if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
			b.Fatalf("building %s: %v\n%s", pkg, err, out)
		}
	}
	env := append(os.Environ(), "MINIO_ROOT_USER="+srv.AccessKey, "MINIO_ROOT_PASSWORD="+srv.SecretKey, "XDG_STATE_HOME="+b.TempDir())
	url := "minio://" + srv.Addr + "/" + bucket + "/stream?tls=false"
	var cmdRSS, sdkRSS, cmdAnon, sdkAnon, cmdRate, sdkRate []float64
	round := 0
	for b.Loop() {
		round++
		key := fmt.Sprintf("k%d", round)
		m, err := measurePipe(exec.Command(cmdBin, "put", url, key), env, size)
		if err != nil {
			b.Fatalf("bucketlease put: %v", err)
		}
		cmdRSS, cmdAnon, cmdRate = append(cmdRSS, m.rss), append(cmdAnon, m.anon), append(cmdRate, m.rate)
		if m, err = measurePipe(exec.Command(sdkBin, srv.Addr, bucket, "sdk/"+key), env, size); err != nil {
			b.Fatalf("sdkput: %v", err)
		}
		sdkRSS, sdkAnon, sdkRate = append(sdkRSS, m.rss), append(sdkAnon, m.anon), append(sdkRate, m.rate)
	}
	const mib = 1 << 20
	b.ReportMetric(medianFloat(cmdRSS)/mib, "cmd-rss-MiB")
	b.ReportMetric(medianFloat(sdkRSS)/mib, "sdk-rss-MiB")
	b.ReportMetric(medianFloat(cmdAnon)/mib, "cmd-anon-MiB")
	b.ReportMetric(medianFloat(sdkAnon)/mib, "sdk-anon-MiB")
	b.ReportMetric(medianFloat(cmdRate)/mib, "cmd-MiB/s")
	b.ReportMetric(medianFloat(sdkRate)/mib, "sdk-MiB/s")
	b.ReportMetric(64, "rss-target-MiB")
	b.ReportMetric(float64(size)/mib, "size-MiB")
}

// A pipeRun is what measurePipe measured of one process: its peak
// resident set and the peak of its anonymous part, in bytes, and its
// throughput in bytes a second.
type pipeRun struct{ rss, anon, rate float64 }

// measurePipe runs cmd with env and size bytes of a pattern on a pipe as
// its stdin, and measures it.
func measurePipe(cmd *exec.Cmd, env []string, size int64) (pipeRun, error) {
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	w, err := cmd.StdinPipe()
	if err != nil {
		return pipeRun{}, err
	}
	began := time.Now()
	if err := cmd.Start(); err != nil {
		return pipeRun{}, err
	}
	anon := sampleAnon(cmd.Process.Pid)
	chunk := bytes.Repeat([]byte("bucketlease put benchmark body. "), 32<<10) // 1 MiB
	var werr error
	for left := size; left > 0 && werr == nil; left -= int64(len(chunk)) {
		_, werr = w.Write(chunk[:min(left, int64(len(chunk)))])
	}
	w.Close()
	if err := cmd.Wait(); err != nil {
		return pipeRun{}, fmt.Errorf("%v\n%s", err, out.Bytes())
	}
	if werr != nil && werr != io.ErrClosedPipe {
		return pipeRun{}, werr
	}
	secs := time.Since(began).Seconds()
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return pipeRun{}, fmt.Errorf("no rusage on this system")
	}
	return pipeRun{rss: float64(ru.Maxrss) * 1024, anon: float64(anon()), rate: float64(size) / secs}, nil
}

// sampleAnon samples the anonymous resident memory (RssAnon) of process
// pid every 20 ms until it is gone; the function it returns waits for
// that and returns the peak, in bytes (0 where /proc has none).
func sampleAnon(pid int) func() int64 {
	done := make(chan int64, 1)
	go func() {
		var peak int64
		for {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
			if err != nil {
				done <- peak
				return
			}
			for line := range strings.Lines(string(b)) {
				var kb int64
				if _, err := fmt.Sscanf(line, "RssAnon: %d kB", &kb); err == nil {
					peak = max(peak, kb<<10)
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	return func() int64 { return <-done }
}
