package gcs_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/gcs"
	"github.com/mushroomdb/bucketlease/internal/location"
)

// TestRateLimitedClassified: Cloud Storage's answer to
// a second write to one object name within a second, 429
// rateLimitExceeded, is driver.ErrRateLimited with its Retry-After; the
// client library does not send the conditional write again (a refusal of
// that later attempt would have to be called unknown), and the driver
// declares the limit.
func TestRateLimitedClassified(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Retry-After", "2")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		w.Write([]byte(`{"error":{"code":429,"message":"The object exceeded the rate limit for object mutation operations (create, update, and delete).","errors":[{"reason":"rateLimitExceeded","message":"rate"}]}}`))
	}))
	defer srv.Close()
	b, _, err := location.Open(t.Context(), "gs://bkt?endpoint="+srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Capabilities().KeyWriteInterval; got != 0 {
		t.Errorf("KeyWriteInterval on an emulator = %v, want none declared", got)
	}
	if got := new(gcs.Bucket).Capabilities().KeyWriteInterval; got != time.Second {
		t.Errorf("KeyWriteInterval = %v, want 1s", got)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for _, cond := range []driver.Condition{driver.IfAbsent(), driver.IfMatch("1234")} {
		requests.Store(0)
		_, err := b.Put(ctx, "k", []byte("x"), driver.PutOptions{If: cond})
		if !errors.Is(err, driver.ErrRateLimited) || errors.Is(err, driver.ErrOutcomeUnknown) || errors.Is(err, driver.ErrPrecondition) {
			t.Fatalf("Put %s: %v, want ErrRateLimited alone", cond, err)
		}
		if d, ok := driver.RetryAfter(err); !ok || d != 2*time.Second {
			t.Errorf("RetryAfter = %v, %v; want 2s", d, ok)
		}
		if n := requests.Load(); n != 1 {
			t.Errorf("Put %s was sent %d times, want once", cond, n)
		}
	}
}
