// Package bench measures what the lease costs: many leases held in one
// process, and each driver's overhead over its raw SDK. Its numbers come
// from Go benchmarks (scripts/bench runs them all and prints one table);
// BENCHMARKS.md keeps the results with the machine and the date.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/internal/leaseseam"
	"github.com/mushroomdb/bucketlease/lease"
)

// ManyResult is what holding many leases at once cost.
type ManyResult struct {
	Leases          int
	Held            time.Duration
	Renewals        int64
	Failures        int64 // failed renewals (retried)
	Spurious        int64 // fences or losses of a lease nobody else touched
	BytesPerLease   float64
	CPUPerRenewal   time.Duration
	BusiestSlotFrac float64 // the largest share of renewals in one tenth of the renewal interval
}

// String renders the result as one line.
func (r ManyResult) String() string {
	return fmt.Sprintf("%d leases for %v: %d renewals (%d failed), %d spurious fences/losses, %.0f B/lease, %v CPU/renewal, busiest tenth of the interval had %.0f%% of renewals",
		r.Leases, r.Held, r.Renewals, r.Failures, r.Spurious, r.BytesPerLease, r.CPUPerRenewal, 100*r.BusiestSlotFrac)
}

// HoldMany acquires n leases on distinct prefixes of b (under root), keeps
// them all renewed for hold, then releases them, and measures the cost.
// Leases are acquired over one renewal interval, as a fleet that starts
// over time would, so renewals should stay spread out.
func HoldMany(ctx context.Context, b driver.Bucket, root string, n int, ttl, hold time.Duration) (ManyResult, error) {
	res := ManyResult{Leases: n, Held: hold}
	var renewals, failures, spurious atomic.Int64
	interval := ttl / 3
	slots := make([]atomic.Int64, 10)
	start := time.Now()
	onEvent := func(e lease.Event) {
		switch e.Kind {
		case lease.EventRenewed:
			renewals.Add(1)
			phase := time.Since(start) % interval
			slots[int(phase*10/interval)].Add(1)
		case lease.EventRenewalFailed:
			failures.Add(1)
		case lease.EventFenced, lease.EventLost:
			spurious.Add(1)
		}
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	leases := make([]*lease.Lease, 0, n)
	keepCtx, stopKeeping := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		stopKeeping()
		wg.Wait()
	}()
	for i := range n {
		l, err := lease.Acquire(ctx, bucket.New(b, fmt.Sprintf("%s/p%06d", root, i)),
			leaseseam.With(&lease.Options{TTL: ttl, Logger: quiet, OnEvent: onEvent}, leaseseam.Seams{Getenv: func(string) string { return "" }}))

		if err != nil {
			return res, fmt.Errorf("lease %d: %w", i, err)
		}
		leases = append(leases, l)
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.Keep(keepCtx)
		}()
		// Spread the acquisitions over one renewal interval.
		time.Sleep(interval / time.Duration(n))
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	res.BytesPerLease = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(n)

	cpu0 := cpuTime()
	r0 := renewals.Load()
	for i := range slots {
		slots[i].Store(0)
	}
	select {
	case <-time.After(hold):
	case <-ctx.Done():
		return res, ctx.Err()
	}
	res.Renewals = renewals.Load() - r0
	if res.Renewals > 0 {
		res.CPUPerRenewal = (cpuTime() - cpu0) / time.Duration(res.Renewals)
		var busiest int64
		for i := range slots {
			busiest = max(busiest, slots[i].Load())
		}
		res.BusiestSlotFrac = float64(busiest) / float64(res.Renewals)
	}
	res.Failures, res.Spurious = failures.Load(), spurious.Load()
	// Release while the renewal loops still run, so that no lease waits
	// unrenewed behind the others' releases; each Keep then returns.
	var errs []error
	for _, l := range leases {
		if err := l.Release(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	stopKeeping()
	wg.Wait()
	return res, errors.Join(errs...)
}
