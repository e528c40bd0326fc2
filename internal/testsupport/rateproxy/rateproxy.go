// Package rateproxy is an S3 service that allows one write per second to
// one key, as Cloudflare R2 and Google Cloud Storage do, made on the wire
// from a real one: a reverse proxy on 127.0.0.1 in front of an
// S3-compatible server (MinIO in the tests) that answers a PUT or DELETE
// of a key sooner than Interval after the previous one it forwarded for
// that key with 429 Too Many Requests, Retry-After: 1 and an S3 error
// body, without forwarding it: a rate-limited write is not applied.
//
// It forwards every other request unchanged, Host header included, so the
// client's SigV4 signature (which signs the Host) still holds at the
// server and nothing needs re-signing.
package rateproxy

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Code is the S3 error code of the proxy's 429 answer.
const Code = "TooManyRequests"

// Proxy is a running proxy.
type Proxy struct {
	// Interval is the spacing it enforces between writes to one key; a
	// second unless set before the first request.
	Interval time.Duration

	srv     *http.Server
	ln      net.Listener
	done    chan struct{}
	mu      sync.Mutex
	last    map[string]time.Time
	limited atomic.Int64
	writes  atomic.Int64
}

// Start listens on a free port of 127.0.0.1 and forwards to upstream, the
// base URL of the S3-compatible server, until Close.
func Start(upstream string) (*Proxy, error) {
	up, err := url.Parse(upstream)
	if err != nil || (up.Scheme != "http" && up.Scheme != "https") || up.Host == "" {
		return nil, fmt.Errorf("rateproxy: upstream %q is not an http(s) base URL", upstream)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("rateproxy: listen: %w", err)
	}
	p := &Proxy{Interval: time.Second, ln: ln, done: make(chan struct{}), last: map[string]time.Time{}}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(up)
			// S3 paths pass through unchanged, and the signed Host too.
			r.Out.URL.Path, r.Out.URL.RawPath = r.In.URL.Path, r.In.URL.RawPath
			r.Out.Host = r.In.Host
		},
	}
	p.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if wait, limited := p.admit(r); limited {
			p.refuse(w, r, wait)
			return
		}
		rp.ServeHTTP(w, r)
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(p.done)
		_ = p.srv.Serve(ln)
	}()
	return p, nil
}

// admit decides whether r may be forwarded now: any read, and a write to
// a key that has had no write forwarded within Interval.
func (p *Proxy) admit(r *http.Request) (time.Duration, bool) {
	if r.Method != http.MethodPut && r.Method != http.MethodDelete {
		return 0, false
	}
	if r.URL.Query().Has("uploadId") || r.URL.Query().Has("partNumber") {
		return 0, false // parts of a multipart upload are other objects
	}
	p.writes.Add(1)
	key := r.URL.EscapedPath()
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if last, ok := p.last[key]; ok && now.Sub(last) < p.Interval {
		p.limited.Add(1)
		return p.Interval - now.Sub(last), true
	}
	p.last[key] = now
	return 0, false
}

// refuse answers 429 the way R2 does, with Retry-After in whole seconds.
func (p *Proxy) refuse(w http.ResponseWriter, r *http.Request, wait time.Duration) {
	if r.Body != nil {
		r.Body.Close()
	}
	secs := max(int((wait+time.Second-1)/time.Second), 1)
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("Date", time.Now().UTC().Format(http.TimeFormat))
	w.WriteHeader(http.StatusTooManyRequests)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>Reduce your concurrent request rate for the same object.</Message><Resource>%s</Resource></Error>`,
		Code, r.URL.EscapedPath())
}

// URL returns the proxy's base URL, "http://127.0.0.1:PORT".
func (p *Proxy) URL() string { return "http://" + p.ln.Addr().String() }

// Limited returns how many writes the proxy answered with 429.
func (p *Proxy) Limited() int64 { return p.limited.Load() }

// Writes returns how many writes (PUT or DELETE of an object) reached the
// proxy.
func (p *Proxy) Writes() int64 { return p.writes.Load() }

// Close stops the proxy and waits for it to stop serving.
func (p *Proxy) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := p.srv.Shutdown(ctx)
	<-p.done
	return err
}
