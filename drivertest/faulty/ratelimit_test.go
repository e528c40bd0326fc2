package faulty_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/clock"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/mem"
	"github.com/mushroomdb/bucketlease/drivertest/faulty"
	"github.com/mushroomdb/bucketlease/internal/objects"
)

// TestRateLimit: a second write to one key within the interval is refused
// with ErrRateLimited and the Retry-After, before it reaches the store;
// another key, a read, and a write once the interval has passed go
// through.
func TestRateLimit(t *testing.T) {
	ctx := context.Background()
	c := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	inner := mem.New()
	r := &faulty.RateLimit{Bucket: inner, Clock: c, RetryAfter: time.Second, Declare: true}
	if got := r.Capabilities().KeyWriteInterval; got != time.Second {
		t.Errorf("declared %v", got)
	}
	a, err := r.Put(ctx, "k", []byte("1"), driver.PutOptions{If: driver.IfAbsent()})
	if err != nil {
		t.Fatal(err)
	}
	v := a.Version
	_, err = r.Put(ctx, "k", []byte("2"), driver.PutOptions{If: driver.IfMatch(v)})
	if !errors.Is(err, driver.ErrRateLimited) || errors.Is(err, driver.ErrPrecondition) {
		t.Fatalf("second write: %v", err)
	}
	if d, ok := driver.RetryAfter(err); !ok || d != time.Second {
		t.Errorf("RetryAfter = %v %v", d, ok)
	}
	if data, _, _ := objects.ReadAll(ctx, inner, "k", 10, driver.GetOptions{}); string(data) != "1" {
		t.Errorf("the refused write reached the store: %q", data)
	}
	if _, err := r.Put(ctx, "other", []byte("x"), driver.PutOptions{}); err != nil {
		t.Errorf("another key: %v", err)
	}
	c.Advance(time.Second)
	if _, err := r.Put(ctx, "k", []byte("2"), driver.PutOptions{If: driver.IfMatch(v)}); err != nil {
		t.Errorf("a second later: %v", err)
	}
	if err := r.Delete(ctx, "k", driver.Condition{}); !errors.Is(err, driver.ErrRateLimited) {
		t.Errorf("delete within the interval: %v", err)
	}
	if r.Refused() != 2 {
		t.Errorf("refused %d", r.Refused())
	}
}
