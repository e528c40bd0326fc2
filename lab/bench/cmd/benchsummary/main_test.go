package main

import (
	"strings"
	"testing"
)

const sample = `goos: linux
BenchmarkOverhead/s3/put-ifmatch/driver-2   	      15	  32000000 ns/op	   45456 B/op	     524 allocs/op
BenchmarkOverhead/s3/put-ifmatch/driver-2   	      15	  30000000 ns/op	   45000 B/op	     520 allocs/op
BenchmarkOverhead/s3/put-ifmatch/driver-2   	      15	  90000000 ns/op	   45100 B/op	     522 allocs/op
BenchmarkOverhead/s3/put-ifmatch/raw-2      	      21	  29000000 ns/op	   40921 B/op	     522 allocs/op
BenchmarkOverhead/s3/put-ifmatch/interleaved-2	14	37796307 ns/op	15825832 driver-median-ns	1.05 driver/raw	1.01 paired-driver/raw	14411013 raw-median-ns	81870 B/op	1045 allocs/op
BenchmarkOverhead/s3/put-ifmatch/interleaved-2	14	37796307 ns/op	15825832 driver-median-ns	1.30 driver/raw	1.02 paired-driver/raw	14411013 raw-median-ns	81870 B/op	1045 allocs/op
BenchmarkOverhead/s3/put-ifmatch/interleaved-2	14	37796307 ns/op	15825832 driver-median-ns	1.07 driver/raw	1.03 paired-driver/raw	14411013 raw-median-ns	81870 B/op	1045 allocs/op
BenchmarkOverhead/s3/get/driver-2  	 100	 2000000 ns/op	 100 B/op	 10 allocs/op
BenchmarkOverhead/s3/get/raw-2     	 100	 1000000 ns/op	 100 B/op	 10 allocs/op
BenchmarkOverhead/s3/get/interleaved-2	100	3000000 ns/op	1.5 driver/raw
    manyleases_test.go:40: BenchmarkManyLeasesMem 1000 leases ...
BenchmarkManyLeasesMem/1000-2 	1	12000000000 ns/op	2000 B/lease	10000 cpu-ns/renewal	9000 renewals	0 spurious	12 busiest-tenth-%
BenchmarkManyLeasesMem/10000-2	1	13000000000 ns/op	2100 B/lease	11000 cpu-ns/renewal	90000 renewals	0 spurious	11 busiest-tenth-%
--- FAIL: BenchmarkManyLeasesMinIO
    manyleases_test.go:53: 1000 leases for 9s: 1287 renewals (0 failed), 857 spurious fences/losses, 2247 B/lease, 1.073346ms CPU/renewal, busiest tenth of the interval had 15% of renewals
    manyleases_test.go:55: 857 spurious fences or losses
PASS
`

func TestSummary(t *testing.T) {
	runs, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if got := len(runs.by["Overhead/s3/put-ifmatch/driver"]); got != 3 {
		t.Fatalf("%d driver runs, want 3", got)
	}
	if v, _ := runs.median("Overhead/s3/put-ifmatch/driver", "ns/op"); v != 32000000 {
		t.Errorf("median ns/op %v", v)
	}
	rows, ok := summarize(runs, config{maxRatio: 1.10, maxGrowth: 1.5, expect: []string{"s3", "gcs"},
		expectMany: []string{"ManyLeasesMem/1000", "ManyLeasesMinIO", "ManyLeasesOther"}})
	if ok {
		t.Error("all targets met, but get (1.5), gcs (missing) and MinIO (spurious) miss")
	}
	out := render(rows)
	flat := strings.Join(strings.Fields(out), " ") // cells' padding aside
	for _, want := range []string{
		"| Overhead/s3/put-ifmatch driver",
		"| 1.070 (paired 1.020) | ≤ 1.10 | yes",
		"| Overhead/s3/put-ifmatch raw | 29000000 |",
		"| 1.500 ",
		"NO (+36%)",
		"| Overhead/gcs |",
		"NO (not measured)",
		"ManyLeasesMem/1000 (CPU ns/renewal, B/lease)",
		"yes (0 in 9000 renewals)",
		"| ManyLeasesMinIO (CPU ns/renewal, B/lease) | 1073346 | 2247 |",
		"NO (857 spurious in 1287 renewals)",
		"| ManyLeasesOther | - |",
		"NO (not run)",
		"| ×1.10 | ×1.05 |",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "put-ifabsent") {
		t.Errorf("a row for an operation that was not run:\n%s", out)
	}
	t.Log("\n" + out)
}

func TestParseBadValue(t *testing.T) {
	if _, err := parse(strings.NewReader("BenchmarkX-2 1 abc ns/op\n")); err == nil {
		t.Error("no error for a non-numeric value")
	}
}

const streamSample = `BenchmarkStream/s3/interleaved-2   	1	9000000000 ns/op	 230.00 MB/s	 110.0 driver-MiB/s	 64.4 driver-heap-MiB	 80.00 heap-target-MiB	 0.97 paired-thru-driver/raw	 115.0 raw-MiB/s	 96.4 raw-heap-MiB	 64.1 driver-live-MiB	 80.2 raw-live-MiB	 1024 size-MiB	 3 rounds	 0.9565 thru-driver/raw
BenchmarkStream/gcs/interleaved-2  	1	9000000000 ns/op	 230.00 MB/s	 80.0 driver-MiB/s	 96.5 driver-heap-MiB	 80.00 heap-target-MiB	 0.80 paired-thru-driver/raw	 100.0 raw-MiB/s	 16.2 raw-heap-MiB	 1024 size-MiB	 0.80 thru-driver/raw
BenchmarkStreamRenewals-2 	1	90000000000 ns/op	 27.00 connections	 8.000 link-MiB/s	 0.9444 link-use	 0 ttl30s-failed	 7182627 ttl30s-idle-p50-ns	5000000000 ttl30s-limit-ns	 54413630 ttl30s-max-ns	 35069249 ttl30s-p50-ns	 54413630 ttl30s-p99-ns	 9.000 ttl30s-renewals	 0 ttl30s-spurious	 0 ttl3s-failed	 5837933 ttl3s-idle-p50-ns	 500000000 ttl3s-limit-ns	 80944896 ttl3s-max-ns	 37977714 ttl3s-p50-ns	 600000000 ttl3s-p99-ns	 90.00 ttl3s-renewals	 1 ttl3s-spurious	 4.000 uploads
`

func TestSummaryStream(t *testing.T) {
	runs, err := parse(strings.NewReader(streamSample))
	if err != nil {
		t.Fatal(err)
	}
	c := config{minStream: 0.95, expectStream: []string{"s3", "azure"}, expectRenew: true}
	rows, ok := summarizeStream(runs, c)
	if ok {
		t.Error("stream targets met, but gcs (0.80, 96.5 MiB) and azure (missing) miss")
	}
	flat := strings.Join(strings.Fields(renderTable(streamHeader, 3, rows)), " ")
	for _, want := range []string{
		"| Stream/s3 throughput MiB/s (3 rounds) | 1024 | 110.0 | 115.0 | 0.957 (paired 0.970) | ≥ 0.95 | yes |",
		"| Stream/s3 peak heap MiB (largest) | 1024 | 64.4 (live 64.1) | 96.4 (live 80.2) | - | ≤ 80 (driver) | yes |",
		"| Stream/azure | - | - | - | - | ≥ 0.95 | NO (not measured) |",
		"| 0.800 (paired 0.800) | ≥ 0.95 | NO (−16%) |",
		"| ≤ 80 (driver) | NO (+16.5 MiB) |",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("stream table lacks %q:\n%s", want, flat)
		}
	}
	rows, ok = summarizeRenewals(runs, c)
	if ok {
		t.Error("renewal targets met, but the 3 s lease was fenced and its p99 is over 500 ms")
	}
	out := renderTable(renewHeader, 5, rows)
	flat = strings.Join(strings.Fields(out), " ")
	for _, want := range []string{
		"| StreamRenewals ttl30s (link 8 MiB/s, 94% used) | 9 | 0 | 35 | 54 | 7 | 0 spurious, p99 < 5000 ms | yes |",
		"| StreamRenewals ttl3s (link 8 MiB/s, 94% used) | 90 | 1 | 38 | 600 | 6 | 0 spurious, p99 < 500 ms | NO (fenced, p99) |",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("renewals table lacks %q:\n%s", want, out)
		}
	}
	if strings.Index(out, "ttl30s") > strings.Index(out, "ttl3s ") {
		t.Errorf("the longer TTL is not first:\n%s", out)
	}
	if rows, ok := summarizeRenewals(Runs{}, c); ok || len(rows) != 1 || !strings.Contains(rows[0][7], "not run") {
		t.Errorf("a missing renewals benchmark: %v, %v", rows, ok)
	}
	if rows, ok := summarizeRenewals(Runs{}, config{}); !ok || rows != nil {
		t.Errorf("renewals not expected: %v, %v", rows, ok)
	}
}
