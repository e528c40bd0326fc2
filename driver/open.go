package driver

import (
	"context"
	"errors"
	"fmt"
	"maps"
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
	// Locate says, from u alone, where it points: the bucket, the key
	// prefix and the endpoint (the service the bucket is on, empty for the
	// scheme's one public service; it is put in a canonical form: scheme
	// and host in lower case, no default port, no trailing slash).
	// It must agree with Open on the prefix, and give equal answers for
	// URLs that name the same objects and different ones otherwise. It may
	// refuse a URL Open would refuse, but need not. If nil, the URL's host
	// is the bucket, its path the prefix, and every query parameter part of
	// the endpoint: two spellings of one place may then differ, but two
	// places never coincide.
	Locate func(u *url.URL) (bucket, prefix, endpoint string, err error)
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

// Register makes the URLs of scheme (such as "s3") known to the programs
// that open buckets by URL (bucket.Open), opened and located by s. Drivers call it once, from their
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

// Schemes returns what drivers registered, by scheme in lower case. The
// map is a copy.
func Schemes() map[string]Scheme {
	registered.mu.RLock()
	defer registered.mu.RUnlock()
	return maps.Clone(registered.schemes)
}

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
