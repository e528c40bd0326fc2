package driver

import (
	"context"
	"fmt"
	"net/url"
	"path"
	"sort"
	"strings"
)

// Location is a bucket URL parsed once: where it points (Bucket, Prefix,
// Endpoint), what the driver reads (URL), what may be printed (String) and
// what names the place for good (Key), so that no layer parses the URL again
// and each agrees on which prefix it names. ParseURL makes one; Open opens
// it. A Scheme's Locate returns one with Bucket, Prefix and Endpoint set.
//
// Bucket, Prefix and Endpoint say where the URL points without how it
// happens to spell it (a trailing slash, a parameter at its default value,
// the parameters' order) or settings that do not change which objects it
// names (a region, path-style addressing, TLS verification).
type Location struct {
	// Scheme is the URL's scheme in lower case.
	Scheme string
	// Bucket is the bucket, container or directory, as the service names
	// it.
	Bucket string
	// Prefix is the key prefix within the bucket, with no leading or
	// trailing slash; empty for the whole bucket.
	Prefix string
	// Endpoint is the service the bucket is on (a custom S3 endpoint, a
	// MinIO server, an Azure storage account), in a canonical form; empty
	// for the scheme's one public service.
	Endpoint string

	u       *url.URL // as parsed; URL returns a copy
	display string
	scheme  Scheme // what the scheme registered; Open uses its Open
}

// ParseURL parses rawURL, such as "s3://bucket/backups/db1", once, with
// the Locate its scheme registered. Errors show the URL redacted.
func ParseURL(rawURL string) (*Location, error) { return registered.parse(rawURL) }

// parse parses rawURL into a Location, with r's Scheme for its scheme. A
// scheme no driver registered is an error wrapping ErrUnknownScheme; a
// prefix that is not itself a valid key (CheckKey: a control character, a
// double slash, a "." segment), under which every key would be refused,
// is an error wrapping ErrInvalidKey.
func (r *registry) parse(rawURL string) (*Location, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		// url.Parse's error repeats the raw URL; do not pass it on.
		return nil, fmt.Errorf("open %s: not a valid URL", Redact(rawURL))
	}
	l := &Location{Scheme: strings.ToLower(u.Scheme), u: u, display: displayForm(rawURL, u)}
	if u.Scheme == "" {
		return nil, fmt.Errorf("open %s: the URL has no scheme; use one of %s", l, strings.Join(r.names(), ", "))
	}
	r.mu.RLock()
	s, ok := r.schemes[l.Scheme]
	r.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("open %s: %w %q; registered schemes: %s",
			l, ErrUnknownScheme, u.Scheme, strings.Join(r.names(), ", "))
	}
	l.scheme = s
	locate := s.Locate
	if locate == nil {
		locate = genericLocation
	}
	where, err := locate(l.URL())
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", l, err)
	}
	l.Bucket, l.Prefix, l.Endpoint = where.Bucket, where.Prefix, where.Endpoint
	if s.Locate != nil {
		l.Endpoint = cleanEndpoint(l.Endpoint)
	}
	l.Prefix = strings.Trim(l.Prefix, "/")
	if l.Prefix != "" {
		// Every key under the prefix would be refused: say so now, once.
		if err := CheckKey(l.Prefix); err != nil {
			return nil, fmt.Errorf("open %s: the URL's prefix is not a valid key prefix: %w", l, err)
		}
	}
	return l, nil
}

// genericLocation locates a URL of a scheme registered without Locate: the
// URL's host as the bucket, its path as the prefix, and every query
// parameter, sorted, as part of the endpoint, so that two spellings may
// differ where the driver would see one place, but two places never
// coincide.
func genericLocation(u *url.URL) (Location, error) {
	q := u.Query()
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var e strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&e, "%q=%q;", k, q[k])
	}
	return Location{Bucket: u.Host, Prefix: strings.Trim(u.Path, "/"), Endpoint: e.String()}, nil
}

// cleanEndpoint returns an endpoint URL in a canonical form: scheme and
// host in lower case, the scheme's default port left out, no trailing
// slash. What does not parse is returned as it is (the driver's Open
// refuses it).
func cleanEndpoint(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return raw
	}
	scheme, host := strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	host = strings.TrimSuffix(strings.TrimSuffix(host, map[string]string{"https": ":443", "http": ":80"}[scheme]), ":")
	return scheme + "://" + host + strings.TrimRight(path.Clean("/"+u.EscapedPath()), "/")
}

// URL returns a copy of the parsed URL.
func (l *Location) URL() *url.URL {
	if l.u == nil {
		return &url.URL{Scheme: l.Scheme}
	}
	u := *l.u
	if u.User != nil {
		user := *u.User
		u.User = &user
	}
	return &u
}

// String returns the URL as it may be printed: as typed when it holds
// nothing Redact would hide, else redacted.
func (l *Location) String() string { return l.display }

// Key names the place for good: equal for two spellings of one location,
// different for two locations. It is made of the scheme, bucket, prefix and
// endpoint, and holds no secret (a URL carrying one is refused by its
// driver).
func (l *Location) Key() string {
	return fmt.Sprintf("%s %q %q %q", l.Scheme, l.Bucket, l.Prefix, l.Endpoint)
}

// displayForm is rawURL as it may be printed.
func displayForm(rawURL string, u *url.URL) string {
	red := redactParsed(*u, 0)
	a, errA := url.QueryUnescape(red)
	b, errB := url.QueryUnescape(rawURL)
	if errA == nil && errB == nil && a == b {
		return rawURL
	}
	return red
}

// Open opens the bucket at l, which ParseURL made, with its scheme's Open,
// and returns it; the prefix is l.Prefix. An Open whose prefix disagrees
// with the scheme's Locate is an error: the two would name different
// places.
func (l *Location) Open(ctx context.Context) (Bucket, error) {
	if l.scheme.Open == nil {
		return nil, fmt.Errorf("open %s: the Location was not made by ParseURL", l)
	}
	b, prefix, err := l.scheme.Open(ctx, l.URL())
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", l, err)
	}
	prefix = strings.Trim(prefix, "/")
	switch {
	case prefix == l.Prefix:
	case l.scheme.Locate == nil:
		// The generic Location knows no better than the driver.
		l.Prefix = prefix
	default:
		_ = Close(b)
		return nil, fmt.Errorf("open %s: the %s driver opens prefix %q where its Locate says %q: a driver bug", l, l.Scheme, prefix, l.Prefix)
	}
	return b, nil
}
