//go:build linux

// Command chaos runs the chaos test (lab/chaos) on the drivers named,
// one after another, and prints each run's summary and every violation
// with its seed, schedule and interleaving. scripts/chaos starts the
// emulators and runs it; see docs/chaos.md.
//
//	chaos [--duration 30m] [--driver all|s3,gcs,...] [--seed N] [--ttl 3s]
//	      [--workers 5] [--leases 2] [--control NAME] [--cli=true] [--race] [--dir DIR] [-v]
//
// --duration is the total nemesis time, split evenly between the drivers.
// --control runs a negative control (chaos.Controls) or a scenario
// (chaos.Scenarios) instead of the nemesis. It exits 1 if any run broke an
// invariant (or, with a negative control, if the control went uncaught),
// and 2 if a run could not be carried out.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/mushroomdb/bucketlease/lab/chaos"
)

func main() {
	duration := flag.Duration("duration", 2*time.Minute, "total nemesis time, split evenly between the drivers")
	drivers := flag.String("driver", "all", `"all" or a comma-separated list of: `+strings.Join(chaos.Drivers, ", ")+", s3-stripped")
	seed := flag.Uint64("seed", 0, "the first run's seed (0: from the clock); run i uses seed+i")
	ttl := flag.Duration("ttl", 3*time.Second, "the lease TTL (whole seconds)")
	workers := flag.Int("workers", 5, "worker processes per run (at least 5)")
	leases := flag.Int("leases", 2, "prefixes they contend for (at least 2)")
	control := flag.String("control", "", "run a negative control instead ("+strings.Join(chaos.Controls, ", ")+"), or a scenario ("+strings.Join(chaos.Scenarios, ", ")+")")
	dir := flag.String("dir", "", "where the logs go (default: a new temporary directory, kept)")
	verbose := flag.Bool("v", false, "print every nemesis action")
	race := flag.Bool("race", false, "build the worker and bucketlease with the race detector; a race report is a violation")
	cli := flag.Bool("cli", true, "run the last worker slot as bucketlease hold --wait -- chaosworker -child (normal runs only)")
	wrongClocks := flag.Bool("wrong-clocks", true, "start worker slots 1 and 2 with a wall clock an hour ahead and an hour behind, which the lease must refuse with ErrClock (normal runs only)")
	flag.Parse()
	if *seed == 0 {
		*seed = uint64(time.Now().UnixNano() % 1e9)
	}
	names := chaos.Drivers
	if *drivers != "all" {
		names = strings.Split(*drivers, ",")
	}
	if *workers < 5 || *leases < 2 {
		fmt.Fprintln(os.Stderr, "chaos: at least 5 workers and 2 leases")
		os.Exit(2)
	}
	if *dir == "" {
		d, err := os.MkdirTemp("", "bucketlease-chaos-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "chaos:", err)
			os.Exit(2)
		}
		*dir = d
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/mushroomdb/bucketlease").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos: go list -m:", err)
		os.Exit(2)
	}
	bin, err := chaos.BuildWorker(ctx, strings.TrimSpace(string(root)), *dir, *race)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	}
	cliBin := ""
	if *cli && *control == "" {
		if cliBin, err = chaos.BuildCLI(ctx, strings.TrimSpace(string(root)), *dir, *race); err != nil {
			fmt.Fprintln(os.Stderr, "chaos:", err)
			os.Exit(2)
		}
	}
	per := *duration / time.Duration(len(names))
	fmt.Printf("chaos: %d driver(s), %v each, TTL %v, %d workers, %d leases, first seed %d, logs in %s\n",
		len(names), per.Round(time.Second), *ttl, *workers, *leases, *seed, *dir)
	var progress io.Writer
	if *verbose {
		progress = os.Stdout
	}
	bad, failed := 0, 0
	var summaries []string
	for i, name := range names {
		if ctx.Err() != nil {
			fmt.Println("chaos: interrupted; the remaining drivers do not run")
			break
		}
		runDir := filepath.Join(*dir, fmt.Sprintf("%02d-%s", i, name))
		if err := os.MkdirAll(runDir, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "chaos:", err)
			os.Exit(2)
		}
		res, err := chaos.Run(ctx, chaos.Config{Driver: name, Seed: *seed + uint64(i), Duration: per, TTL: *ttl,
			Workers: *workers, Leases: *leases, Control: *control, Dir: runDir, WorkerBin: bin, CLIBin: cliBin, Progress: progress,
			SaneClocks: !*wrongClocks})
		if err != nil {
			fmt.Printf("chaos %s: could not run: %v\n", name, err)
			failed++
			continue
		}
		for _, v := range res.Check.Violations {
			fmt.Print(res.Report(v))
		}
		s := res.Summary()
		summaries = append(summaries, s)
		fmt.Println("chaos summary:", s)
		if !slices.Contains(chaos.Controls, *control) {
			bad += len(res.Check.Violations)
		} else if len(res.Check.Violations) == 0 {
			fmt.Printf("chaos %s: control %s was NOT caught\n", name, *control)
			bad++
		}
	}
	fmt.Printf("chaos: %s UTC, %d run(s):\n", time.Now().UTC().Format("2006-01-02 15:04"), len(summaries))
	for _, s := range summaries {
		fmt.Println("  " + s)
	}
	switch {
	case failed > 0:
		os.Exit(2)
	case bad > 0:
		os.Exit(1)
	}
}
