package s3_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	s3sdk "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/r2"
	"github.com/mushroomdb/bucketlease/driver/s3"
)

// rateLimitingServer answers every request with status and the S3 error
// code, with Retry-After if it is not empty, and counts the requests.
func rateLimitingServer(t *testing.T, status int, code, retryAfter string) (*s3sdk.Client, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(status)
		if r.Method != http.MethodHead {
			w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>` + code + `</Code><Message>slow down</Message></Error>`))
		}
	}))
	t.Cleanup(srv.Close)
	c := s3sdk.New(s3sdk.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("a", "b", ""),
		// A short backoff, so that a retry the SDK makes shows at once.
		Retryer: retryerNoWait(),
	})
	return c, &n
}

// TestRateLimitedClassified: a 429 (R2) and a 503
// SlowDown (AWS) are driver.ErrRateLimited, with the Retry-After the
// service gave; a conditional Put that was rate-limited is returned at
// once, not sent again by the SDK (whose later refusal would have to be
// called unknown); a 503 that is not SlowDown is no rate limit.
func TestRateLimitedClassified(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name       string
		status     int
		code       string
		retryAfter string
		want       time.Duration
		limited    bool
	}{
		{"r2 429 with Retry-After", 429, "TooManyRequests", "1", time.Second, true},
		{"429 without a code or Retry-After", 429, "", "", 0, true},
		{"s3 SlowDown", 503, "SlowDown", "3", 3 * time.Second, true},
		{"503 ServiceUnavailable", 503, "ServiceUnavailable", "1", 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			client, n := rateLimitingServer(t, c.status, c.code, c.retryAfter)
			b := s3.New(client, "b")
			_, err := b.Put(ctx, "k", []byte("x"), driver.PutOptions{If: driver.IfAbsent()})
			if got := errors.Is(err, driver.ErrRateLimited); got != c.limited {
				t.Fatalf("Put IfAbsent: %v; rate-limited %v, want %v", err, got, c.limited)
			}
			if errors.Is(err, driver.ErrPrecondition) || errors.Is(err, driver.ErrOutcomeUnknown) {
				t.Errorf("Put IfAbsent: %v, a refusal or an unknown outcome", err)
			}
			if d, ok := driver.RetryAfter(err); d != c.want || ok != (c.want > 0) {
				t.Errorf("RetryAfter = %v, %v; want %v", d, ok, c.want)
			}
			if c.limited && n.Load() != 1 {
				t.Errorf("the rate-limited conditional write was sent %d times, want once", n.Load())
			}
			_, _, gerr := b.Get(ctx, "k", driver.GetOptions{})
			if got := errors.Is(gerr, driver.ErrRateLimited); got != c.limited {
				t.Errorf("Get: %v; rate-limited %v, want %v", gerr, got, c.limited)
			}
		})
	}
}

// TestKeyWriteIntervalDeclared: R2 declares its one write per second to
// one object name; AWS declares none.
func TestKeyWriteIntervalDeclared(t *testing.T) {
	if got := r2.New(nil, "b").Capabilities().KeyWriteInterval; got != time.Second {
		t.Errorf("r2 KeyWriteInterval = %v, want 1s", got)
	}
	if got := s3.New(nil, "b").Capabilities().KeyWriteInterval; got != 0 {
		t.Errorf("s3 KeyWriteInterval = %v, want 0", got)
	}
}

// retryerNoWait is the SDK's standard retryer without backoff.
func retryerNoWait() aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) { o.Backoff = noBackoff{} })
}

type noBackoff struct{}

func (noBackoff) BackoffDelay(int, error) (time.Duration, error) { return 0, nil }
