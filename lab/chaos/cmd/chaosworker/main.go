//go:build linux

// Command chaosworker is the worker process of the chaos test
// (lab/chaos): it contends for the lease on each -url's prefix and
// writes backups under it, logging every step as JSON lines to -log, until
// SIGTERM or SIGINT, when it releases and exits. The harness builds it with
// go build and starts many of them; it is not meant to be run by hand.
//
// Credentials come from the environment, as for the bucketlease command.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	_ "github.com/mushroomdb/bucketlease/driver/azure"
	_ "github.com/mushroomdb/bucketlease/driver/file"
	_ "github.com/mushroomdb/bucketlease/driver/gcs"
	_ "github.com/mushroomdb/bucketlease/driver/minio"
	_ "github.com/mushroomdb/bucketlease/driver/r2"
	_ "github.com/mushroomdb/bucketlease/driver/s3"
	"github.com/mushroomdb/bucketlease/lab/chaos"
)

type urls []string

// String and Set make urls a repeatable flag.
func (u *urls) String() string     { return strings.Join(*u, " ") }
func (u *urls) Set(s string) error { *u = append(*u, s); return nil }

func main() {
	var cfg chaos.WorkerConfig
	var us urls
	var logPath string
	flag.StringVar(&cfg.Proc, "proc", "w", "the process's name in the logs")
	flag.StringVar(&cfg.ID, "id", "", "the lease instance id")
	flag.Var(&us, "url", "a driver URL whose prefix to contend for (repeatable)")
	flag.DurationVar(&cfg.TTL, "ttl", 2*time.Second, "the lease TTL")
	flag.DurationVar(&cfg.Skew, "skew", 0, "offset of the wall clock the lease reads")
	flag.DurationVar(&cfg.ClockOffset, "clock-offset", 0, "test only: the wall clock the lease reads is wrong by this much from the start, beside -skew (clock.Offset): the lease must refuse it with ErrClock")
	flag.BoolVar(&cfg.NoFence, "no-fence", false, "negative control: write through the raw bucket, ignoring the fence")
	flag.BoolVar(&cfg.NoServiceTime, "no-service-time", false, "negative control: the lease's driver reports no service time, so records are judged on the machines' clocks alone")
	flag.BoolVar(&cfg.LieRefusal, "lie-refusal", false, "negative control: the driver reports the first refused If-None-Match PUT of each LEASE object as a success")
	flag.BoolVar(&cfg.StreamUnfenced, "stream-unfenced", false, "negative control: stream every backup's first chunk past the fence, holding its body back until the lease may no longer write")
	flag.BoolVar(&cfg.CalmStreams, "calm-streams", false, "stream every eighth backup's first chunk, unpaced (the negative controls)")
	flag.StringVar(&logPath, "log", "", "the JSON-lines log to append to")
	maxRun := flag.Duration("max-run", time.Hour, "release and exit after this long, whatever happens")
	child := flag.Bool("child", false, "run as the command of bucketlease hold: write under hold's lease (BUCKETLEASE_INSTANCE_ID)")
	flag.Parse()
	if *child {
		cfg.ID = os.Getenv("BUCKETLEASE_INSTANCE_ID")
	}
	if cfg.ID == "" || len(us) == 0 || logPath == "" {
		fmt.Fprintln(os.Stderr, "chaosworker: -id, -url and -log are required")
		os.Exit(2)
	}
	cfg.URLs = us
	cfg.Deadline = time.Now().Add(*maxRun)
	l, err := chaos.OpenLogger(logPath, cfg.Proc, cfg.ID)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaosworker:", err)
		os.Exit(1)
	}
	cfg.Log = l
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if *child {
		err = chaos.RunChild(ctx, cfg)
	} else {
		err = chaos.RunWorker(ctx, cfg)
	}
	l.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaosworker:", err)
		os.Exit(1)
	}
}
