// Package wirefault makes faults on the wire: an http.RoundTripper that
// lets the service act on a request, then drops the reply as a reset
// connection would; it can also watch requests and alter replies.
// drivertest puts it under a driver's own client (Options.Transport).
package wirefault

import (
	"errors"
	"io"
	"net/http"
	"sync"
)

// ErrReplyDropped is the transport error a dropped reply turns into.
var ErrReplyDropped = errors.New("wirefault: connection reset after the request was sent")

// Transport forwards every request to Base (http.DefaultTransport if nil)
// and drops the replies of those Drop selects, once answered. Sent sees each
// request before it goes, Reply each kept reply before the client; Drop,
// Sent and Reply are called with one lock held.
type Transport struct {
	Base  http.RoundTripper
	Drop  func(*http.Request) bool
	Sent  func(*http.Request)
	Reply func(*http.Response)

	mu      sync.Mutex
	dropped int
}

// RoundTrip sends req and, if Drop selects it, discards the answer.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	if t.Sent != nil {
		t.mu.Lock()
		t.Sent(req)
		t.mu.Unlock()
	}
	resp, err := base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	t.mu.Lock()
	drop := t.Drop != nil && t.Drop(req)
	if drop {
		t.dropped++
	} else if t.Reply != nil {
		t.Reply(resp)
	}
	t.mu.Unlock()
	if !drop {
		return resp, nil
	}
	io.Copy(io.Discard, resp.Body) // the service has answered: it acted
	resp.Body.Close()
	return nil, ErrReplyDropped
}

// Dropped returns how many replies were dropped.
func (t *Transport) Dropped() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.dropped
}

// Once returns a Drop that selects only the first request match accepts.
func Once(match func(*http.Request) bool) func(*http.Request) bool {
	done := false
	return func(r *http.Request) bool {
		if done || !match(r) {
			return false
		}
		done = true
		return true
	}
}

// Write matches a request that may change the store: not GET or HEAD.
func Write(r *http.Request) bool {
	return r.Method != http.MethodGet && r.Method != http.MethodHead
}

// ConditionalPut matches a PUT carrying the given precondition header
// ("If-None-Match" or "If-Match") to a path ending in suffix.
func ConditionalPut(header, suffix string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		return r.Method == http.MethodPut && r.Header.Get(header) != "" && len(r.URL.Path) >= len(suffix) &&
			r.URL.Path[len(r.URL.Path)-len(suffix):] == suffix
	}
}
