// Command benchsummary reads the output of the lab/bench benchmarks
// (go test -bench, any -count) and prints one Markdown table: each measured
// figure as the median over the runs, the driver/raw ratio of each driver
// operation, the many-leases results, and whether each target is met; then
// a table of the streaming benchmarks (BenchmarkStream: throughput against
// the SDK's uploader, peak heap) and one of the renewals under a saturated
// link (BenchmarkStreamRenewals), each with its targets.
//
//	go run ./lab/bench/cmd/benchsummary [-max-ratio 1.10] [-max-growth 1.5] [-min-stream-ratio 0.95] [-expect s3,r2,...] FILE...
//
// With no FILE it reads standard input. It exits 1 if a target is missed
// or an expected driver was not measured, 2 on bad input.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

func main() {
	maxRatio := flag.Float64("max-ratio", 1.10, "the driver/raw target")
	maxGrowth := flag.Float64("max-growth", 1.5, "the largest growth of B/lease and CPU/renewal from 1,000 to 10,000 leases that counts as flat")
	expect := flag.String("expect", "s3,r2,minio,gcs,azure", "the drivers the overhead benchmark must have measured")
	expectMany := flag.String("expect-many", "ManyLeasesMem/1000,ManyLeasesMem/10000,ManyLeasesMinIO", "the many-leases benchmarks that must have run")
	minStream := flag.Float64("min-stream-ratio", 0.95, "the streamed write's driver/raw throughput target")
	expectStream := flag.String("expect-stream", "s3,r2,minio,gcs,azure", "the drivers BenchmarkStream must have measured")
	expectRenew := flag.Bool("expect-renewals", true, "BenchmarkStreamRenewals must have run")
	flag.Parse()

	var in []io.Reader
	for _, name := range flag.Args() {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		defer f.Close()
		in = append(in, f)
	}
	if len(in) == 0 {
		in = append(in, os.Stdin)
	}
	runs, err := parse(io.MultiReader(in...))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	c := config{maxRatio: *maxRatio, maxGrowth: *maxGrowth, expect: splitList(*expect), expectMany: splitList(*expectMany),
		minStream: *minStream, expectStream: splitList(*expectStream), expectRenew: *expectRenew}
	rows, ok := summarize(runs, c)
	stream, sok := summarizeStream(runs, c)
	renew, rok := summarizeRenewals(runs, c)
	var tables []string
	if len(rows) > 0 {
		tables = append(tables, render(rows))
	}
	if len(stream) > 0 {
		tables = append(tables, renderTable(streamHeader, 3, stream))
	}
	if len(renew) > 0 {
		tables = append(tables, renderTable(renewHeader, 5, renew))
	}
	fmt.Print(strings.Join(tables, "\n"))
	if !ok || !sok || !rok {
		os.Exit(1)
	}
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// Runs maps a benchmark's name (without "Benchmark" and the -GOMAXPROCS
// suffix) to the metrics of each of its runs, in input order.
type Runs struct {
	order []string
	by    map[string][]map[string]float64
}

// failLine starts the log of a failed benchmark; holdLine is the line
// HoldMany's result prints (ManyResult.String).
var (
	failLine = regexp.MustCompile(`^--- FAIL: Benchmark(\S+)`)
	holdLine = regexp.MustCompile(`(\d+) leases for \S+: (\d+) renewals \((\d+) failed\), (\d+) spurious fences/losses, (-?[\d.]+) B/lease, (\S+) CPU/renewal`)
)

func atof(s string) float64 {
	v, _ := strconv.ParseFloat(s, 64)
	return v
}

// procSuffix is the -N that go test appends for GOMAXPROCS.
var procSuffix = regexp.MustCompile(`-\d+$`)

// parse reads go test -bench output. Lines that are not benchmark results
// (goos, PASS, logs) are skipped.
func parse(r io.Reader) (Runs, error) {
	runs := Runs{by: map[string][]map[string]float64{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	failing := "" // the benchmark whose "--- FAIL" lines are being read
	for sc.Scan() {
		if m := failLine.FindStringSubmatch(sc.Text()); m != nil {
			failing = procSuffix.ReplaceAllString(m[1], "")
			continue
		}
		if m := holdLine.FindStringSubmatch(sc.Text()); m != nil && failing != "" {
			// A failed many-leases benchmark prints no result line; its
			// log line still says what the hold measured.
			cpu, _ := time.ParseDuration(m[6])
			run := map[string]float64{"failed": 1, "leases": atof(m[1]), "renewals": atof(m[2]),
				"spurious": atof(m[4]), "B/lease": atof(m[5]), "cpu-ns/renewal": float64(cpu.Nanoseconds())}
			if _, seen := runs.by[failing]; !seen {
				runs.order = append(runs.order, failing)
			}
			runs.by[failing] = append(runs.by[failing], run)
			failing = ""
			continue
		}
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") || len(f)%2 != 0 {
			continue
		}
		if _, err := strconv.ParseInt(f[1], 10, 64); err != nil {
			continue // a log line that starts with a benchmark's name
		}
		name := procSuffix.ReplaceAllString(strings.TrimPrefix(f[0], "Benchmark"), "")
		m := map[string]float64{}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return runs, fmt.Errorf("benchmark line %q: value %q: %v", sc.Text(), f[i], err)
			}
			m[f[i+1]] = v
		}
		if _, seen := runs.by[name]; !seen {
			runs.order = append(runs.order, name)
		}
		runs.by[name] = append(runs.by[name], m)
	}
	return runs, sc.Err()
}

// median returns the median of unit over name's runs, and whether any run
// reported it.
func (r Runs) median(name, unit string) (float64, bool) {
	var vs []float64
	for _, m := range r.by[name] {
		if v, ok := m[unit]; ok {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return 0, false
	}
	slices.Sort(vs)
	n := len(vs) / 2
	if len(vs)%2 == 1 {
		return vs[n], true
	}
	return (vs[n-1] + vs[n]) / 2, true
}

type config struct {
	maxRatio, maxGrowth float64
	expect, expectMany  []string
	// minStream is the target of a streamed write's driver/raw
	// throughput; expectStream the drivers BenchmarkStream must have
	// measured; expectRenew whether BenchmarkStreamRenewals must have run.
	minStream    float64
	expectStream []string
	expectRenew  bool
}

// Row is one line of the table.
type Row struct {
	Bench, NsOp, BOp, AllocsOp, Ratio, Target, Met string
}

var ops = []string{"put-ifmatch", "put-ifabsent", "get"}

// summarize builds the rows and reports whether every target is met.
func summarize(r Runs, c config) ([]Row, bool) {
	ok := true
	var rows []Row
	drivers := slices.Clone(c.expect)
	for _, name := range r.order {
		rest, isOverhead := strings.CutPrefix(name, "Overhead/")
		if d, _, _ := strings.Cut(rest, "/"); isOverhead && d != "" && !slices.Contains(drivers, d) {
			drivers = append(drivers, d)
		}
	}
	for _, d := range drivers {
		measured := false
		for _, op := range ops {
			base := "Overhead/" + d + "/" + op
			ratio, hasRatio := r.median(base+"/interleaved", "driver/raw")
			_, hasDriver := r.by[base+"/driver"]
			if !hasRatio && !hasDriver {
				continue
			}
			measured = true
			row := sideRow(r, base, "driver")
			row.Target = fmt.Sprintf("≤ %.2f", c.maxRatio)
			switch {
			case !hasRatio:
				row.Ratio, row.Met = "-", "NO (no interleaved run)"
				ok = false
			default:
				row.Ratio = fmt.Sprintf("%.3f", ratio)
				if paired, has := r.median(base+"/interleaved", "paired-driver/raw"); has {
					row.Ratio += fmt.Sprintf(" (paired %.3f)", paired)
				}
				if ratio <= c.maxRatio {
					row.Met = "yes"
				} else {
					row.Met = fmt.Sprintf("NO (+%.0f%%)", 100*(ratio-c.maxRatio)/c.maxRatio)
					ok = false
				}
			}
			rows = append(rows, row, sideRow(r, base, "raw"))
		}
		if !measured {
			rows = append(rows, Row{Bench: "Overhead/" + d, NsOp: "-", BOp: "-", AllocsOp: "-", Ratio: "-",
				Target: fmt.Sprintf("≤ %.2f", c.maxRatio), Met: "NO (not measured)"})
			ok = false
		}
	}

	many := map[string]map[string]float64{}
	for _, name := range r.order {
		if !strings.HasPrefix(name, "ManyLeases") {
			continue
		}
		m := map[string]float64{}
		for _, u := range []string{"B/lease", "cpu-ns/renewal", "renewals", "spurious"} {
			m[u], _ = r.median(name, u)
		}
		many[name] = m
		worst := 0.0
		for _, run := range r.by[name] {
			worst = max(worst, run["spurious"])
		}
		row := Row{Bench: name + " (CPU ns/renewal, B/lease)",
			NsOp: fmt.Sprintf("%.0f", m["cpu-ns/renewal"]), BOp: fmt.Sprintf("%.0f", m["B/lease"]), AllocsOp: "-",
			Ratio: "-", Target: "0 spurious fences"}
		failed := false
		for _, run := range r.by[name] {
			failed = failed || run["failed"] == 1
		}
		if worst == 0 && !failed {
			row.Met = fmt.Sprintf("yes (0 in %.0f renewals)", m["renewals"])
		} else {
			row.Met = fmt.Sprintf("NO (%.0f spurious in %.0f renewals)", worst, m["renewals"])
			ok = false
		}
		rows = append(rows, row)
	}
	for _, name := range c.expectMany {
		if _, ran := many[name]; !ran {
			rows = append(rows, Row{Bench: name, NsOp: "-", BOp: "-", AllocsOp: "-", Ratio: "-",
				Target: "0 spurious fences", Met: "NO (not run)"})
			ok = false
		}
	}
	small, large := many["ManyLeasesMem/1000"], many["ManyLeasesMem/10000"]
	if small != nil && large != nil {
		gb := growth(large["B/lease"], small["B/lease"])
		gc := growth(large["cpu-ns/renewal"], small["cpu-ns/renewal"])
		row := Row{Bench: "ManyLeasesMem 10000 ÷ 1000 (growth per renewal, per lease)",
			NsOp: fmt.Sprintf("×%.2f", gc), BOp: fmt.Sprintf("×%.2f", gb), AllocsOp: "-", Ratio: "-",
			Target: fmt.Sprintf("≤ ×%.2f (flat)", c.maxGrowth)}
		if gb <= c.maxGrowth && gc <= c.maxGrowth {
			row.Met = "yes"
		} else {
			row.Met = "NO"
			ok = false
		}
		rows = append(rows, row)
	}
	return rows, ok
}

// growth is large/small, or +Inf-like 999 when small is 0.
func growth(large, small float64) float64 {
	if small <= 0 {
		return 999
	}
	return large / small
}

// sideRow is the ns/op, B/op and allocs/op of one side of a pair.
func sideRow(r Runs, base, side string) Row {
	row := Row{Bench: base + " " + side}
	f := func(unit string) string {
		if v, ok := r.median(base+"/"+side, unit); ok {
			return fmt.Sprintf("%.0f", v)
		}
		return "-"
	}
	row.NsOp, row.BOp, row.AllocsOp = f("ns/op"), f("B/op"), f("allocs/op")
	return row
}

// render prints rows as a Markdown table with aligned columns.
func render(rows []Row) string {
	cells := make([][]string, 0, len(rows))
	for _, r := range rows {
		cells = append(cells, []string{r.Bench, r.NsOp, r.BOp, r.AllocsOp, r.Ratio, r.Target, r.Met})
	}
	return renderTable([]string{"benchmark", "ns/op", "B/op", "allocs/op", "driver/raw", "target", "met?"}, 3, cells)
}

// renderTable prints a Markdown table with aligned columns: columns 1 to
// nums (numbers) right-aligned, the others left-aligned.
func renderTable(header []string, nums int, rows [][]string) string {
	all := append([][]string{header}, rows...)
	n := len(header)
	numeric := func(i int) bool { return i >= 1 && i <= nums }
	width := make([]int, n)
	for _, r := range all {
		for i, c := range r {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	var b strings.Builder
	line := func(cs []string) {
		b.WriteString("|")
		for i, c := range cs {
			pad := strings.Repeat(" ", width[i]-len([]rune(c)))
			if numeric(i) {
				b.WriteString(" " + pad + c + " |") // numbers right-aligned
			} else {
				b.WriteString(" " + c + pad + " |")
			}
		}
		b.WriteString("\n")
	}
	line(all[0])
	sep := make([]string, n)
	for i := range sep {
		sep[i] = strings.Repeat("-", width[i])
		if numeric(i) {
			sep[i] = strings.Repeat("-", width[i]-1) + ":"
		}
	}
	line(sep)
	for _, r := range all[1:] {
		line(r)
	}
	return b.String()
}
