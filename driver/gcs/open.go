package gcs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"cloud.google.com/go/auth"
	"cloud.google.com/go/auth/credentials"
	"cloud.google.com/go/auth/httptransport"
	"cloud.google.com/go/storage"
	"google.golang.org/api/option"

	"github.com/mushroomdb/bucketlease/driver"
)

// OpenURL is the Open of the driver.Scheme for gs:// URLs. The Bucket owns
// the client it creates: close it when done.
func OpenURL(ctx context.Context, u *url.URL) (driver.Bucket, string, error) {
	q, err := driver.Params(u, "endpoint")
	if err != nil {
		return nil, "", err
	}
	if u.User != nil {
		return nil, "", errors.New("gs URLs carry no credentials; they come from Application Default Credentials")
	}
	if u.Host == "" {
		return nil, "", errors.New("the URL names no bucket; use gs://BUCKET/prefix")
	}
	if err := CheckBucketName(u.Host); err != nil {
		return nil, "", err
	}
	endpoint, noAuth, err := parseEndpoint(q.Get("endpoint"))
	if err != nil {
		return nil, "", err
	}
	var creds *auth.Credentials
	if !noAuth {
		if creds, err = credentials.DetectDefault(&credentials.DetectOptions{Scopes: scopes}); err != nil {
			return nil, "", fmt.Errorf("gcs: Application Default Credentials: %w", err)
		}
	}
	// Two clients, each on a transport of its own, so that a renewal never
	// queues behind a chunk on one HTTP/2 connection: streamed writes and
	// listings on one, Get, Put and Delete on the other.
	client, tr, err := newClient(ctx, endpoint, creds)
	if err != nil {
		return nil, "", err
	}
	control, ctr, err := newClient(ctx, endpoint, creds)
	if err != nil {
		client.Close()
		tr.CloseIdleConnections()
		return nil, "", err
	}
	b := &Bucket{bkt: client.Bucket(u.Host), ctl: control.Bucket(u.Host), emulated: noAuth,
		owned: []*storage.Client{client, control}, transports: []*http.Transport{tr, ctr}}
	return b, strings.Trim(u.Path, "/"), nil
}

// parseEndpoint checks the endpoint parameter and returns the JSON API's
// base URL ("" for the client library's default) and whether requests go
// without credentials: to an http:// endpoint (an emulator), so that a
// token never crosses the network in clear text, or, without the
// parameter, where STORAGE_EMULATOR_HOST sends them to an emulator.
func parseEndpoint(endpoint string) (string, bool, error) {
	if endpoint == "" {
		return "", os.Getenv("STORAGE_EMULATOR_HOST") != "", nil
	}
	e, err := url.Parse(endpoint)
	if err != nil || e.Host == "" || (e.Scheme != "http" && e.Scheme != "https") ||
		e.User != nil || e.RawQuery != "" || e.Fragment != "" {
		return "", false, errors.New(`the endpoint parameter must be a URL such as "http://127.0.0.1:4443" or "https://storage.example.com"`)
	}
	e.Path = strings.TrimRight(e.Path, "/") + "/storage/v1/"
	return e.String(), e.Scheme == "http", nil
}

// scopes are the OAuth scopes the client library asks for by default.
var scopes = []string{storage.ScopeFullControl, "https://www.googleapis.com/auth/cloud-platform"}

// newClient creates a client on an HTTP transport of its own, so that
// Close can close its idle connections (storage.Client.Close does not);
// creds nil sends none.
func newClient(ctx context.Context, endpoint string, creds *auth.Credentials) (*storage.Client, *http.Transport, error) {
	var tr *http.Transport
	if def, ok := http.DefaultTransport.(*http.Transport); ok {
		tr = def.Clone()
	} else {
		tr = &http.Transport{Proxy: http.ProxyFromEnvironment, ForceAttemptHTTP2: true, MaxIdleConns: 100,
			IdleConnTimeout: 90 * time.Second, TLSHandshakeTimeout: 10 * time.Second, ExpectContinueTimeout: time.Second}
	}
	tr.MaxIdleConnsPerHost = 100 // as the client library sets it
	rt := ServiceTimeTransport(tr)
	hc := &http.Client{Transport: rt}
	if creds != nil {
		var err error
		hc, err = httptransport.NewClient(&httptransport.Options{BaseRoundTripper: rt, Credentials: creds})
		if err != nil {
			return nil, nil, fmt.Errorf("gcs: Application Default Credentials: %w", err)
		}
	}
	// Reads use the JSON API like every other call, rather than the client
	// library's default XML API, which emulators serve only on their
	// "public host".
	opts := []option.ClientOption{option.WithHTTPClient(hc), storage.WithJSONReads()}
	if endpoint != "" {
		opts = append(opts, option.WithEndpoint(endpoint))
	}
	client, err := storage.NewClient(ctx, opts...)
	if err != nil {
		tr.CloseIdleConnections()
		return nil, nil, fmt.Errorf("gcs: create client: %w", err)
	}
	return client, tr, nil
}

// CheckBucketName reports whether name follows Cloud Storage's bucket
// naming rule; the error says the rule.
func CheckBucketName(name string) error {
	why := ""
	limit := 63
	if strings.Contains(name, ".") {
		limit = 222
	}
	switch {
	case len(name) < 3 || len(name) > limit:
		why = fmt.Sprintf("it is %d characters long", len(name))
	case strings.ContainsFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_')
	}):
		why = "it has a character other than a lower-case letter, a digit, a hyphen, an underscore or a dot"
	case !alnum(name[0]) || !alnum(name[len(name)-1]):
		why = "it does not begin and end with a letter or digit"
	case net.ParseIP(name) != nil:
		why = "it is an IP address"
	case strings.HasPrefix(name, "goog"):
		why = `it begins with "goog"`
	}
	for _, part := range strings.Split(name, ".") {
		if why == "" && (part == "" || len(part) > 63) {
			why = "a dot-separated part is empty or longer than 63 characters"
		}
	}
	if why == "" {
		return nil
	}
	return fmt.Errorf("bucket name %q is not valid (%s): Cloud Storage bucket names are 3 to 63 lower-case letters, "+
		"digits, hyphens, underscores and dots, beginning and ending with a letter or digit; the URL's host is the "+
		"bucket (gs://BUCKET/PREFIX), and a server's address belongs in the endpoint parameter", name, why)
}

func alnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }
