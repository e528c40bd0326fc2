package bench

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Op is one request under measurement: a driver call or the raw SDK call
// that sends the same request. An Op that needs a fresh key each call keeps
// its own counter, since one Op runs in several benchmarks.
type Op func(ctx context.Context) error

// Pair is one operation measured two ways against the same server: through
// the driver and as the raw SDK call.
type Pair struct {
	Name   string // "put-ifmatch", "put-ifabsent", "get"
	Driver Op
	Raw    Op
}

// Interleaved is the result of running a Pair's two sides alternately.
type Interleaved struct {
	N            int           // calls of each side
	DriverMedian time.Duration // median latency of one driver call
	RawMedian    time.Duration // median latency of one raw call
	// PairedRatio is the median over rounds of driver/raw latency within
	// the round: a second estimate, insensitive to load that changes
	// slowly compared with one round.
	PairedRatio float64
}

// Ratio is DriverMedian/RawMedian, the driver's overhead as a factor (1.0
// means none); 0 if nothing was measured.
func (r Interleaved) Ratio() float64 {
	if r.RawMedian <= 0 {
		return 0
	}
	return float64(r.DriverMedian) / float64(r.RawMedian)
}

// Interleave calls p.Driver and p.Raw n times each, alternating which goes
// first in each round, times every call, and returns the two medians.
// Alternating cancels drift and warm-up between the two sides; medians
// ignore the long tail that a loaded machine adds to loopback round trips.
// The first error stops the run. n is bounded by the caller (a benchmark's
// b.N); each side's latencies are kept, 8 bytes a call.
func Interleave(ctx context.Context, p Pair, n int) (Interleaved, error) {
	return interleave(ctx, p, n, time.Since)
}

// interleave is Interleave with the stopwatch given, so that a test can
// check the arithmetic without timing anything.
func interleave(ctx context.Context, p Pair, n int, since func(time.Time) time.Duration) (Interleaved, error) {
	res := Interleaved{N: n}
	if n <= 0 {
		return res, nil
	}
	drv := make([]time.Duration, 0, n)
	raw := make([]time.Duration, 0, n)
	timed := func(op Op, i int, into *[]time.Duration, side string) error {
		t0 := time.Now()
		err := op(ctx)
		*into = append(*into, since(t0))
		if err != nil {
			return fmt.Errorf("%s %s call %d: %w", p.Name, side, i, err)
		}
		return nil
	}
	for i := range n {
		first, second := func() error { return timed(p.Driver, i, &drv, "driver") },
			func() error { return timed(p.Raw, i, &raw, "raw") }
		if i%2 == 1 {
			first, second = second, first
		}
		if err := first(); err != nil {
			return res, err
		}
		if err := second(); err != nil {
			return res, err
		}
	}
	res.DriverMedian, res.RawMedian = Median(drv), Median(raw)
	rounds := make([]float64, 0, n)
	for i := range drv {
		if raw[i] > 0 {
			rounds = append(rounds, float64(drv[i])/float64(raw[i]))
		}
	}
	if len(rounds) > 0 {
		slices.Sort(rounds)
		m := len(rounds) / 2
		res.PairedRatio = rounds[m]
		if len(rounds)%2 == 0 {
			res.PairedRatio = (rounds[m-1] + rounds[m]) / 2
		}
	}
	return res, nil
}

// Median returns the median of ds (the mean of the middle two for an even
// count), or 0 for none. ds is not modified.
func Median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}
