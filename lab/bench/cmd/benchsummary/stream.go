package main

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// The columns of the streaming tables.
var (
	streamHeader = []string{"benchmark", "size MiB", "driver", "raw", "driver/raw", "target", "met?"}
	renewHeader  = []string{"benchmark", "renewals", "spurious", "p50 ms", "p99 ms", "idle p50 ms", "target", "met?"}
)

// worst returns the largest value of unit over name's runs, and whether any
// run reported it.
func (r Runs) worst(name, unit string) (float64, bool) {
	w, seen := 0.0, false
	for _, m := range r.by[name] {
		if v, ok := m[unit]; ok {
			if !seen || v > w {
				w = v
			}
			seen = true
		}
	}
	return w, seen
}

// summarizeStream builds the rows of BenchmarkStream/<driver>/interleaved:
// per driver one throughput row (median MiB/s of each side; the median
// driver/raw throughput ratio is judged against c.minStream) and one heap
// row (the largest peak heap growth of a driver write over the runs,
// judged against heap-target-MiB; the raw uploader's beside it for
// information; each with the largest growth of the live heap, garbage
// aside, where the benchmark reported it). It reports whether every
// target is met.
func summarizeStream(r Runs, c config) ([][]string, bool) {
	ok := true
	drivers := slices.Clone(c.expectStream)
	for _, name := range r.order {
		if rest, is := strings.CutPrefix(name, "Stream/"); is {
			if d, _, _ := strings.Cut(rest, "/"); d != "" && !slices.Contains(drivers, d) {
				drivers = append(drivers, d)
			}
		}
	}
	var rows [][]string
	target := fmt.Sprintf("≥ %.2f", c.minStream)
	for _, d := range drivers {
		name := "Stream/" + d + "/interleaved"
		ratio, has := r.median(name, "thru-driver/raw")
		if !has {
			rows = append(rows, []string{"Stream/" + d, "-", "-", "-", "-", target, "NO (not measured)"})
			ok = false
			continue
		}
		size, _ := r.median(name, "size-MiB")
		dr, _ := r.median(name, "driver-MiB/s")
		rr, _ := r.median(name, "raw-MiB/s")
		paired, _ := r.median(name, "paired-thru-driver/raw")
		met := "yes"
		if ratio < c.minStream {
			met = fmt.Sprintf("NO (−%.0f%%)", 100*(c.minStream-ratio)/c.minStream)
			ok = false
		}
		n := 0
		for _, m := range r.by[name] {
			n += int(m["rounds"])
		}
		rows = append(rows, []string{fmt.Sprintf("Stream/%s throughput MiB/s (%d round%s)", d, n, plural(n)),
			fmt.Sprintf("%.0f", size), fmt.Sprintf("%.1f", dr), fmt.Sprintf("%.1f", rr),
			fmt.Sprintf("%.3f (paired %.3f)", ratio, paired), target, met})

		heap, _ := r.worst(name, "driver-heap-MiB")
		rawHeap, _ := r.worst(name, "raw-heap-MiB")
		limit, hasLimit := r.median(name, "heap-target-MiB")
		cell := func(v float64, side string) string {
			c := fmt.Sprintf("%.1f", v)
			if live, has := r.worst(name, side+"-live-MiB"); has {
				c += fmt.Sprintf(" (live %.1f)", live)
			}
			return c
		}
		row := []string{fmt.Sprintf("Stream/%s peak heap MiB (largest)", d), fmt.Sprintf("%.0f", size),
			cell(heap, "driver"), cell(rawHeap, "raw"), "-", fmt.Sprintf("≤ %.0f (driver)", limit), "yes"}
		if !hasLimit || heap > limit {
			row[6] = "NO"
			if hasLimit {
				row[6] = fmt.Sprintf("NO (+%.1f MiB)", heap-limit)
			}
			ok = false
		}
		rows = append(rows, row)
	}
	return rows, ok
}

// ttlMetric matches BenchmarkStreamRenewals' per-lease metrics.
var ttlMetric = regexp.MustCompile(`^(ttl\d+s)-spurious$`)

// summarizeRenewals builds one row per lease of BenchmarkStreamRenewals:
// spurious fences (worst run; target 0) and renewal latency p99 (worst
// run; target under the lease's TTL/6, which the benchmark reports). It
// reports whether every target is met, and that the benchmark ran if
// c.expectRenew.
func summarizeRenewals(r Runs, c config) ([][]string, bool) {
	const name = "StreamRenewals"
	runs := r.by[name]
	if len(runs) == 0 {
		if c.expectRenew {
			return [][]string{{name, "-", "-", "-", "-", "-", "0 spurious, p99 < TTL/6", "NO (not run)"}}, false
		}
		return nil, true
	}
	var ttls []string
	for u := range runs[0] {
		if m := ttlMetric.FindStringSubmatch(u); m != nil {
			ttls = append(ttls, m[1])
		}
	}
	// Longest TTL first: ttl30s before ttl3s.
	secs := func(t string) float64 { return atof(strings.TrimSuffix(strings.TrimPrefix(t, "ttl"), "s")) }
	slices.SortFunc(ttls, func(a, b string) int { return cmp.Compare(secs(b), secs(a)) })
	ok := true
	var rows [][]string
	ms := func(ns float64) string { return fmt.Sprintf("%.0f", ns/1e6) }
	for _, t := range ttls {
		spurious, _ := r.worst(name, t+"-spurious")
		p99, _ := r.worst(name, t+"-p99-ns")
		p50, _ := r.median(name, t+"-p50-ns")
		idle, _ := r.median(name, t+"-idle-p50-ns")
		renewals, _ := r.median(name, t+"-renewals")
		limit, _ := r.median(name, t+"-limit-ns")
		row := []string{fmt.Sprintf("%s %s (link %s, %.0f%% used)", name, t, linkRate(r, name), 100*medianOr(r, name, "link-use")),
			fmt.Sprintf("%.0f", renewals), fmt.Sprintf("%.0f", spurious), ms(p50), ms(p99), ms(idle),
			fmt.Sprintf("0 spurious, p99 < %s ms", ms(limit)), "yes"}
		switch {
		case renewals == 0:
			row[7] = "NO (no renewal timed)"
			ok = false
		case spurious > 0 && p99 >= limit:
			row[7] = "NO (fenced, p99)"
			ok = false
		case spurious > 0:
			row[7] = "NO (fenced)"
			ok = false
		case p99 >= limit:
			row[7] = "NO (p99)"
			ok = false
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		return [][]string{{name, "-", "-", "-", "-", "-", "0 spurious, p99 < TTL/6", "NO (no lease measured)"}}, false
	}
	return rows, ok
}

func medianOr(r Runs, name, unit string) float64 {
	v, _ := r.median(name, unit)
	return v
}

func linkRate(r Runs, name string) string {
	v, ok := r.median(name, "link-MiB/s")
	if !ok {
		return "?"
	}
	return fmt.Sprintf("%.0f MiB/s", v)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
