// Package httpdate records the Date header of responses a client library
// does not show its driver (minio-go, the GCS client library), so that the
// driver can report the service's time.
package httpdate

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Parse returns the time an HTTP Date (or Last-Modified) header value
// states, or the zero time for an empty or malformed one.
func Parse(v string) time.Time {
	if v == "" {
		return time.Time{}
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return time.Time{}
	}
	return t
}

// Capture holds the Date of the last response a Transport received for a
// request sent under its Context. The zero value is ready to use; it is
// safe for concurrent use.
type Capture struct {
	mu   sync.Mutex
	date time.Time
}

// captureKey is the context key of a Capture.
type captureKey struct{}

// Context returns ctx under which a Transport records into c.
func (c *Capture) Context(ctx context.Context) context.Context {
	return context.WithValue(ctx, captureKey{}, c)
}

// Date returns the Date of the last response recorded, or the zero time
// if there was none (no response, a response without a Date, or a client
// whose transport is not a Transport).
func (c *Capture) Date() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.date
}

func (c *Capture) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.date = t
}

// Transport returns base (http.DefaultTransport if nil) wrapped so that
// responses to requests under a Capture's context record their Date in it.
func Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{base: base}
}

type transport struct{ base http.RoundTripper }

// RoundTrip sends r through the base transport and records the response's
// Date in the Capture of r's context, if it has one.
func (t *transport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if resp != nil {
		if c, ok := r.Context().Value(captureKey{}).(*Capture); ok {
			if d := Parse(resp.Header.Get("Date")); !d.IsZero() {
				c.set(d)
			}
		}
	}
	return resp, err
}

// CloseIdleConnections closes the base transport's idle connections, if
// it has a CloseIdleConnections method.
func (t *transport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// RetryAfter returns the wait an HTTP Retry-After header (seconds, or a
// date relative to now) asks for, or false if it is empty or malformed.
func RetryAfter(h string, now time.Time) (time.Duration, bool) {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0, false
	}
	if n, err := strconv.ParseInt(h, 10, 64); err == nil {
		if n < 0 {
			return 0, false
		}
		return time.Duration(min(n, int64(24*time.Hour/time.Second))) * time.Second, true
	}
	t, err := http.ParseTime(h)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}
