// Package location parses a bucket URL once, with what its scheme
// registered, into the Location every layer of this module reads, and opens
// it: package bucket's Open and the command use it; users open a URL with
// bucket.Open.
package location

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"sort"
	"strings"

	"github.com/mushroomdb/bucketlease/driver"
)

// Location is a bucket URL parsed once, so that every layer agrees on
// which place it names. Bucket, Prefix and Endpoint (from the scheme's
// Locate) say where it points, whatever its spelling or settings that do
// not change which objects it names.
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
	scheme  driver.Scheme // what the scheme registered; Open uses its Open
}

// Parse parses rawURL, such as "s3://bucket/backups/db1", once, with
// the Locate its scheme registered. Errors show the URL redacted.
func Parse(rawURL string) (*Location, error) { return parse(rawURL, driver.Schemes()) }

// parse parses rawURL into a Location with schemes; an unregistered scheme
// wraps ErrUnknownScheme, a prefix that is not a valid key ErrInvalidKey.
func parse(rawURL string, schemes map[string]driver.Scheme) (*Location, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		// url.Parse's error repeats the raw URL; do not pass it on.
		return nil, fmt.Errorf("open %s: not a valid URL", Redact(rawURL))
	}
	l := &Location{Scheme: strings.ToLower(u.Scheme), u: u, display: displayForm(rawURL, u)}
	if u.Scheme == "" {
		return nil, fmt.Errorf("open %s: the URL has no scheme; use one of %s", l, strings.Join(names(schemes), ", "))
	}
	s, ok := schemes[l.Scheme]
	if !ok {
		return nil, fmt.Errorf("open %s: %w %q; registered schemes: %s",
			l, ErrUnknownScheme, u.Scheme, strings.Join(names(schemes), ", "))
	}
	l.scheme = s
	locate := s.Locate
	if locate == nil {
		locate = genericLocation
	}
	l.Bucket, l.Prefix, l.Endpoint, err = locate(l.URL())
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", l, err)
	}
	if s.Locate != nil {
		l.Endpoint = cleanEndpoint(l.Endpoint)
	}
	l.Prefix = strings.Trim(l.Prefix, "/")
	if l.Prefix != "" {
		// Every key under the prefix would be refused: say so now, once.
		if err := driver.CheckKey(l.Prefix); err != nil {
			return nil, fmt.Errorf("open %s: the URL's prefix is not a valid key prefix: %w", l, err)
		}
	}
	return l, nil
}

// genericLocation locates a URL of a scheme registered without Locate:
// host, path, and every query parameter in the endpoint, so that two
// places never coincide.
func genericLocation(u *url.URL) (bucket, prefix, endpoint string, err error) {
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
	return u.Host, strings.Trim(u.Path, "/"), e.String(), nil
}

// cleanEndpoint returns an endpoint URL in a canonical form; what does not
// parse is returned as it is (the driver's Open refuses it).
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
// different for two locations. It holds no secret.
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

// Open opens the bucket at l with its scheme's Open; the prefix is
// l.Prefix (a driver whose prefix disagrees is an error).
func (l *Location) Open(ctx context.Context) (driver.Bucket, error) {
	if l.scheme.Open == nil {
		return nil, fmt.Errorf("open %s: the Location was not made by Parse", l)
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

// names returns the schemes of schemes, sorted.
func names(schemes map[string]driver.Scheme) []string {
	s := make([]string, 0, len(schemes))
	for k := range schemes {
		s = append(s, k)
	}
	sort.Strings(s)
	return s
}

// ErrUnknownScheme is wrapped by the error of Open and Parse for a URL
// whose scheme no driver registered.
var ErrUnknownScheme = errors.New("unknown URL scheme")

// open is Parse then Location.Open, with schemes.
func open(ctx context.Context, rawURL string, schemes map[string]driver.Scheme) (driver.Bucket, string, error) {
	l, err := parse(rawURL, schemes)
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
// prefix the URL names. It is Parse then Location.Open; release the Bucket
// with Close.
func Open(ctx context.Context, rawURL string) (driver.Bucket, string, error) {
	return open(ctx, rawURL, driver.Schemes())
}

// Schemes returns the registered schemes, sorted.
func Schemes() []string { return names(driver.Schemes()) }

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

// Redact returns rawURL with its user info, fragment, opaque body and every
// credential-like query value replaced by "REDACTED", including secrets
// nested in other values at any depth of percent-encoding; a string that
// does not parse is reduced to its scheme. Use it on every URL that
// reaches a log or an error.
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

// Close releases what b holds if it implements io.Closer (a driver's Bucket
// that owns a client with a connection pool), else returns nil. Call it on
// every Bucket Open returned once no operation is in flight; a Bucket built
// around a caller's client leaves that client to the caller.
func Close(b driver.Bucket) error {
	if c, ok := b.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
