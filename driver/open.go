package driver

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
)

// A Scheme is everything a driver registers for a URL scheme: how to open
// its URLs and, optionally, where they point.
type Scheme struct {
	// Open opens the bucket u names and returns it with the key prefix u
	// selects (no leading or trailing slash; empty for the bucket's root).
	// It validates u's query with Params, so that a misspelled parameter is
	// refused rather than ignored. It must take credentials from the
	// service's usual sources (environment, profile, workload identity),
	// never from the URL. Required.
	Open func(ctx context.Context, u *url.URL) (b Bucket, prefix string, err error)
	// Locate says, from u alone, where it points: the Bucket, Prefix and
	// Endpoint of the Location it returns (its other fields are ignored;
	// ParseURL puts the Endpoint URL in a canonical form: scheme and host
	// in lower case, no default port, no trailing slash).
	// It must agree with Open on the prefix, and give equal Locations for
	// URLs that name the same objects and different ones otherwise. It may
	// refuse a URL Open would refuse, but need not. If nil, the URL's host
	// is the bucket, its path the prefix, and every query parameter part of
	// the endpoint: two spellings of one place may then differ, but two
	// places never coincide.
	Locate func(u *url.URL) (Location, error)
}

// registry maps URL schemes to what their drivers registered. The zero
// value is empty and ready to use; tests build their own.
type registry struct {
	mu      sync.RWMutex
	schemes map[string]Scheme
}

// registered is the registry drivers register into; it is the only global
// state of this module.
var registered registry

// Register makes the URLs of scheme (such as "s3") known to Open and
// ParseURL, opened and located by s. Drivers call it once, from their
// package's init function. It panics if scheme is empty, s.Open is nil, or
// the scheme is already registered, as database/sql.Register does: two
// drivers claiming one scheme is a programming error.
func Register(scheme string, s Scheme) { registered.register(scheme, s) }

// register adds s to r under scheme, in lower case; it panics on an empty
// scheme, a nil s.Open or a scheme already there.
func (r *registry) register(scheme string, s Scheme) {
	if scheme == "" || s.Open == nil {
		panic("driver: Register with an empty scheme or a nil Open")
	}
	scheme = strings.ToLower(scheme)
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.schemes[scheme]; dup {
		panic("driver: Register called twice for scheme " + scheme)
	}
	if r.schemes == nil {
		r.schemes = make(map[string]Scheme)
	}
	r.schemes[scheme] = s
}

// names returns r's schemes, sorted.
func (r *registry) names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	s := make([]string, 0, len(r.schemes))
	for k := range r.schemes {
		s = append(s, k)
	}
	sort.Strings(s)
	return s
}

// ErrUnknownScheme is wrapped by the error of Open and ParseURL for a URL
// whose scheme no driver registered.
var ErrUnknownScheme = errors.New("unknown URL scheme")

// open is ParseURL then Location.Open, on r.
func (r *registry) open(ctx context.Context, rawURL string) (Bucket, string, error) {
	l, err := r.parse(rawURL)
	if err != nil {
		return nil, "", err
	}
	b, err := l.Open(ctx)
	if err != nil {
		return nil, "", err
	}
	return b, l.Prefix, nil
}

// Open opens the bucket named by rawURL, such as "s3://bucket/backups/db1",
// with the driver registered for its scheme, and returns it with the key
// prefix the URL names ("backups/db1"). The driver's package must be
// imported (for its side effect) for its scheme to be known. Errors show
// the URL with its secrets redacted. It is ParseURL then Location.Open.
//
// The Bucket may own what the driver made for it (the gs driver's storage
// client, with its connection pool): release it with Close once done with
// the Bucket.
func Open(ctx context.Context, rawURL string) (Bucket, string, error) {
	return registered.open(ctx, rawURL)
}

// Schemes returns the registered schemes, sorted.
func Schemes() []string { return registered.names() }

// Params returns u's query after checking that every parameter is one of
// allowed and appears once. An unknown parameter is an error naming it and
// listing the allowed ones: a typo in a safety setting must not fail open.
func Params(u *url.URL, allowed ...string) (url.Values, error) {
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, errors.New("the URL's query cannot be parsed")
	}
	names := make([]string, 0, len(q))
	for k := range q {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if !slices.Contains(allowed, k) {
			if len(allowed) == 0 {
				return nil, fmt.Errorf("unknown query parameter %q: this scheme takes none", redactedParam(k))
			}
			return nil, fmt.Errorf("unknown query parameter %q; allowed: %s", redactedParam(k), strings.Join(allowed, ", "))
		}
		if len(q[k]) > 1 {
			return nil, fmt.Errorf("query parameter %q given %d times", k, len(q[k]))
		}
	}
	return q, nil
}

// redactedParam hides a parameter name that is itself long enough to be a
// pasted secret.
func redactedParam(k string) string {
	if len(k) > 40 {
		return k[:8] + "…"
	}
	return k
}

// secretParam reports whether a query parameter's name suggests that its
// value is a credential.
func secretParam(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"secret", "pass", "pwd", "token", "key", "sig", "credential", "auth", "session", "sas", "connection"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	// Azure SAS tokens spread a signature over short parameters.
	switch n {
	case "sv", "ss", "srt", "sp", "se", "st", "spr", "sr", "skoid", "sktid":
		return true
	}
	return false
}

// Redact returns rawURL with its user info, its fragment, the body of an
// opaque URL (one without "//"), and the value of every query parameter
// whose name suggests a credential, replaced by "REDACTED". A secret nested
// in another parameter's value, at any depth of percent-encoding (an Azure
// SAS URL pasted as an endpoint, say), is redacted too: a value that is a
// URL keeps its shape with its own secrets redacted, and a value that hides
// one under encoding is replaced whole; so is a path or a parameter name
// that decodes to something carrying a secret. A string that does not parse
// as a URL is reduced to its scheme, since it may hold a secret in a place
// no parser can find. Use it on every URL that reaches a log or an error.
func Redact(rawURL string) string {
	return redact(rawURL, 0)
}

// maxNesting bounds how deep Redact looks into nested encodings; anything
// nested deeper is redacted whole.
const maxNesting = 8

func redact(rawURL string, depth int) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		if i := strings.Index(rawURL, "://"); i > 0 && i < 16 && !strings.ContainsAny(rawURL[:i], "@:/?%") {
			return rawURL[:i] + "://REDACTED"
		}
		return "REDACTED"
	}
	return redactParsed(*u, depth)
}

// redactParsed is redact of a URL already parsed; it changes its copy u
// only.
func redactParsed(u url.URL, depth int) string {
	if u.Opaque != "" {
		// "s3:key:secret@bucket" has no "//": a parser finds no user info
		// in it, so none of it can be shown.
		u.Opaque = "REDACTED"
	}
	if u.Fragment != "" {
		u.Fragment, u.RawFragment = "REDACTED", ""
	}
	if u.User != nil {
		u.User = url.User("REDACTED")
	}
	if secretIn(u.Path, depth+1) || secretIn(u.RawPath, depth+1) || strings.ContainsAny(u.Host, "%@") {
		if strings.ContainsAny(u.Host, "%@") {
			u.Host = "REDACTED"
		}
		if secretIn(u.Path, depth+1) || secretIn(u.RawPath, depth+1) {
			u.Path, u.RawPath = "/REDACTED", ""
		}
	}
	if u.RawQuery != "" {
		q, err := url.ParseQuery(u.RawQuery)
		if err != nil {
			u.RawQuery = "REDACTED"
		} else {
			out := url.Values{}
			keys := make([]string, 0, len(q))
			for k := range q {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				vals := q[k]
				name := k
				if strings.ContainsAny(k, "=&?#@%:/") {
					// No real parameter name looks like this: it may be
					// a pasted secret, or hide one under encoding.
					name = "REDACTED"
				}
				for _, v := range vals {
					switch {
					case secretParam(k):
						v = "REDACTED"
					case secretIn(v, depth+1):
						v = redactValue(v, depth+1)
					}
					out.Add(name, v)
				}
			}
			u.RawQuery = out.Encode()
		}
	}
	return u.String()
}

// redactValue redacts a parameter value known to carry a secret: a URL
// whose secrets all sit where redact finds them keeps its shape; anything
// else is replaced whole.
func redactValue(v string, depth int) string {
	if depth < maxNesting {
		if u, err := url.Parse(v); err == nil && u.Scheme != "" && u.Host != "" && u.Opaque == "" {
			// redact finds every secret of a URL: its user info, fragment,
			// secret-named parameters, and (recursively) whatever hides in
			// the other parameters, the path or the host.
			return redact(v, depth)
		}
	}
	return "REDACTED"
}

// secretIn reports whether s, read as a URL, a query string, or either of
// them after any number of percent-decodings, carries user info, a
// fragment, or a parameter whose name suggests a credential. Past
// maxNesting it assumes so.
func secretIn(s string, depth int) bool {
	if s == "" {
		return false
	}
	if depth > maxNesting {
		return true
	}
	if strings.ContainsAny(s, "@#") {
		return true
	}
	if u, err := url.Parse(s); err == nil {
		if u.User != nil || u.Fragment != "" {
			return true
		}
		if queryHasSecret(u.RawQuery, depth) {
			return true
		}
	}
	if strings.ContainsAny(s, "=&") && queryHasSecret(s, depth) {
		return true
	}
	if strings.Contains(s, "?") {
		_, after, _ := strings.Cut(s, "?")
		if queryHasSecret(after, depth) {
			return true
		}
	}
	for _, unescape := range []func(string) (string, error){url.QueryUnescape, url.PathUnescape} {
		if d, err := unescape(s); err == nil && d != s && secretIn(d, depth+1) {
			return true
		}
	}
	if strings.Contains(s, "%") {
		// Not decodable as a whole, so not decodable by a service either,
		// but a part may be: look at each %-run.
		if _, err := url.PathUnescape(s); err != nil {
			return true
		}
	}
	return false
}

// queryHasSecret reports whether the query string q has a parameter whose
// name suggests a credential or whose value carries a secret.
func queryHasSecret(q string, depth int) bool {
	if q == "" {
		return false
	}
	vals, err := url.ParseQuery(q)
	if err != nil {
		return strings.ContainsAny(q, "=")
	}
	for k, vs := range vals {
		if secretParam(k) || secretIn(k, depth+1) {
			return true
		}
		for _, v := range vs {
			if secretIn(v, depth+1) {
				return true
			}
		}
	}
	return false
}
