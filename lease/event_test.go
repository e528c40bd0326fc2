package lease_test

import (
	"context"
	"testing"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/clock"
	"github.com/mushroomdb/bucketlease/lease"
)

// TestTakingAReleasedLeaseLogsNoWarning: every run after the first takes
// over the record its predecessor released; that is an ordinary acquire,
// logged at INFO, so that a tool alerting on WARN does not alert on every
// backup. Taking over a holder that stopped renewing stays a WARN.
func TestTakingAReleasedLeaseLogsNoWarning(t *testing.T) {
	ctx := context.Background()
	b := machineClocksOnly()
	c := clock.NewFake(t0)
	first := acquire(t, b, "a", c)
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	var log logBuffer
	o := opts("b", c, nil)
	o.Logger = log.logger()
	second, err := lease.Acquire(ctx, bucket.New(b, "db1"), o)
	if err != nil {
		t.Fatal(err)
	}
	if !contains(log.String(), "took-over") || contains(log.String(), "level=WARN") {
		t.Fatalf("taking over a released lease logged:\n%s\nwant took-over at INFO and no WARN", log.String())
	}

	c.Advance(2 * ttl) // b stops renewing: its record goes stale
	var log2 logBuffer
	o = opts("c", c, nil)
	o.Logger = log2.logger()
	if _, err := lease.Acquire(ctx, bucket.New(b, "db1"), o); err != nil {
		t.Fatal(err)
	}
	if !contains(log2.String(), "level=WARN msg=\"lease took-over\"") {
		t.Fatalf("taking over a stale lease logged:\n%s\nwant took-over at WARN", log2.String())
	}
	_ = second
}
