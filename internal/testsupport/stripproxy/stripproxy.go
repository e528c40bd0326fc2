// Package stripproxy is an S3 service that accepts conditional writes but
// ignores their preconditions, made on the wire from a real one: a reverse
// proxy on 127.0.0.1 that removes If-Match and If-None-Match from every
// request before forwarding it to an S3-compatible server (MinIO in the
// tests).
//
// The SDK signs those headers: aws-sdk-go-v2's SigV4 signer signs every
// header but Authorization, User-Agent, X-Amzn-Trace-Id, Expect and
// Transfer-Encoding (aws/signer/internal/v4/headers.go, IgnoredHeaders), so
// If-Match and If-None-Match appear in SignedHeaders, and MinIO refuses a
// request that lacks a signed header. The proxy therefore does not verify
// the client's signature; it re-signs each request with its own
// credentials for the upstream server, keeping the client's
// X-Amz-Content-Sha256 as the payload hash so the body passes through
// unread. Presigned URLs and chunk-signed (STREAMING-AWS4-HMAC-SHA256-PAYLOAD)
// bodies are not supported; aws-sdk-go-v2 uses neither for PutObject.
//
// It exists to prove, on the wire, that drivertest and the lease's probe
// fail closed against a service that silently ignores preconditions.
package stripproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Stripped are the request headers the proxy removes.
var Stripped = []string{"If-Match", "If-None-Match"}

// Config says where the proxy forwards and how it signs.
type Config struct {
	// Upstream is the base URL of the S3-compatible server, such as
	// "http://127.0.0.1:9000".
	Upstream string
	// Credentials and Region sign the forwarded requests for Upstream.
	Credentials aws.Credentials
	Region      string
}

// Proxy is a running proxy.
type Proxy struct {
	srv      *http.Server
	ln       net.Listener
	stripped atomic.Int64
	done     chan struct{}
}

// Start listens on a free port of 127.0.0.1 and serves until Close.
func Start(cfg Config) (*Proxy, error) {
	up, err := url.Parse(cfg.Upstream)
	if err != nil || (up.Scheme != "http" && up.Scheme != "https") || up.Host == "" {
		return nil, fmt.Errorf("stripproxy: upstream %q is not an http(s) base URL", cfg.Upstream)
	}
	if cfg.Region == "" {
		return nil, errors.New("stripproxy: no region to sign for")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("stripproxy: listen: %w", err)
	}
	p := &Proxy{ln: ln, done: make(chan struct{})}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(up)
			// SetURL joins paths; S3 paths must pass through unchanged.
			r.Out.URL.Path, r.Out.URL.RawPath = r.In.URL.Path, r.In.URL.RawPath
		},
		Transport: &resigner{
			next:   http.DefaultTransport,
			creds:  cfg.Credentials,
			region: cfg.Region,
			signer: v4.NewSigner(),
			count:  &p.stripped,
		},
	}
	p.srv = &http.Server{Handler: rp, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(p.done)
		_ = p.srv.Serve(ln)
	}()
	return p, nil
}

// URL returns the proxy's base URL, "http://127.0.0.1:PORT".
func (p *Proxy) URL() string { return "http://" + p.ln.Addr().String() }

// StrippedCount returns how many precondition headers the proxy removed.
func (p *Proxy) StrippedCount() int64 { return p.stripped.Load() }

// Close stops the proxy and waits for it to stop serving.
func (p *Proxy) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := p.srv.Shutdown(ctx)
	<-p.done
	return err
}

// resigner strips the precondition headers and signs the request anew.
type resigner struct {
	next   http.RoundTripper
	creds  aws.Credentials
	region string
	signer *v4.Signer
	count  *atomic.Int64
}

func (t *resigner) RoundTrip(req *http.Request) (*http.Response, error) {
	out := req.Clone(req.Context())
	for _, h := range Stripped {
		if _, ok := out.Header[h]; ok {
			out.Header.Del(h)
			t.count.Add(1)
		}
	}
	out.Header.Del("Authorization")
	out.Header.Del("X-Amz-Date")
	payload := out.Header.Get("X-Amz-Content-Sha256")
	if payload == "" {
		payload = "UNSIGNED-PAYLOAD"
		out.Header.Set("X-Amz-Content-Sha256", payload)
	}
	if err := t.signer.SignHTTP(req.Context(), t.creds, out, payload, "s3", t.region, time.Now()); err != nil {
		return nil, fmt.Errorf("stripproxy: re-signing %s %s: %w", out.Method, out.URL.Path, err)
	}
	return t.next.RoundTrip(out)
}
