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
