package drivertest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mushroomdb/bucketlease/clock"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/drivertest/wirefault"
	"github.com/mushroomdb/bucketlease/internal/leaseseam"
	"github.com/mushroomdb/bucketlease/internal/location"
	"github.com/mushroomdb/bucketlease/internal/objects"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// The wire: checks with a transport under the driver's own client
// (Options.Transport), obligations 2, 4, 5 and 11.

var wireChecks = []check{
	check{
		name: "version-header-missing",
		expect: "with the ETag header removed from every reply, Get and Put fail or return the object's real version, " +
			"never an empty one or another",
		needs: needsTransport,
		run:   versionHeaderMissing,
	},
	check{
		name: "wildcard-never-sent",
		area: areaPut,
		expect: `a Put or Delete with IfMatch of a wildcard or a list ("*", "\"*\"", "v1,v2", W/v) puts no request ` +
			"carrying it on the wire, and changes nothing",
		needs: needsTransport,
		run:   wildcardNeverSent,
	},
	check{
		applies: declaresExclusion,
		name:    "lease-lost-reply-wire",
		area:    areaPut,
		expect: "through the driver's own client, an acquire and a renewal whose replies were lost on the wire " +
			"(after the service acted) are recognised as our own: the lease is held, not lost",
		needs: needsWire,
		run:   leaseLostReplyWire,
	},
}

// transportHook returns Options.Transport, or the deprecated Lossy.
func (o Options) transportHook() func(http.RoundTripper) (driver.Bucket, error) {
	if o.Transport != nil {
		return o.Transport
	}
	return o.Lossy
}

func needsTransport(o Options) string {
	if o.transportHook() == nil {
		return "Options.Transport is not set"
	}
	return ""
}

// needsWire is needsTransport for checks that also run with
// Options.BucketFaults; its message stays needsTransport's.
func needsWire(o Options) string {
	if o.transportHook() == nil && !o.BucketFaults {
		return "Options.Transport is not set"
	}
	return ""
}

// wire opens the driver through tr and closes it when the check ends.
func (s *scope) wire(tr http.RoundTripper) (driver.Bucket, error) {
	b, err := s.opts.transportHook()(tr)
	if err != nil {
		return nil, fmt.Errorf("setup: Options.Transport: %v", err)
	}
	if b == nil {
		return nil, errors.New("setup: Options.Transport returned a nil bucket")
	}
	s.mu.Lock()
	s.closers = append(s.closers, func() { _ = location.Close(b) })
	s.mu.Unlock()
	return b, nil
}

// sentCounter counts the requests a wirefault.Transport forwards; Sent is
// called with the transport's lock held.
type sentCounter struct{ n atomic.Int64 }

func (c *sentCounter) sent(*http.Request) { c.n.Add(1) }

// throughHook fails unless the bucket Options.Transport returned sent a
// request through its transport since before (a count of c).
func throughHook(c *sentCounter, before int64, what string) error {
	if c.n.Load() == before {
		return fmt.Errorf("setup: the bucket Options.Transport returned sent no request through its transport (%s)", what)
	}
	return nil
}

func versionHeaderMissing(ctx context.Context, s *scope) error {
	var c sentCounter
	tr := &wirefault.Transport{Sent: c.sent, Reply: func(r *http.Response) { r.Header.Del("ETag") }}
	wb, err := s.wire(tr)
	if err != nil {
		return err
	}
	k := s.key("obj")
	v, err := seed(ctx, s.b, k, []byte("one"))
	if err != nil {
		return err
	}
	// real fails unless got, returned with no error, is the version the
	// bucket under test reports for key.
	real := func(what, key string, got driver.Version) error {
		if got == "" {
			return fmt.Errorf("%s with no ETag in the reply: success with an empty version", what)
		}
		_, rv, err := read(ctx, s.b, key)
		if err != nil {
			return fmt.Errorf("Get after %s: %s", what, outcome(err))
		}
		if got != rv {
			return fmt.Errorf("%s with no ETag in the reply: version %q, but the object's version is %q", what, got, rv)
		}
		return nil
	}
	before := c.n.Load()
	_, gv, gerr := read(ctx, wb, k)
	if err := throughHook(&c, before, "Get"); err != nil {
		return err
	}
	if gerr == nil {
		if err := real("Get", k, gv); err != nil {
			return err
		}
	}
	pv, perr := put(ctx, wb, k, []byte("two"), driver.IfMatch(v))
	if perr == nil {
		if err := real("Put IfMatch", k, pv); err != nil {
			return err
		}
	}
	nk := s.key("new")
	nv, nerr := put(ctx, wb, nk, []byte("new"), driver.IfAbsent())
	if nerr == nil {
		if err := real("Put IfAbsent", nk, nv); err != nil {
			return err
		}
	}
	return nil
}

// matchParam reports whether a header or query parameter name carries a
// write precondition (If-Match, ifGenerationMatch, x-ms-if-match, ...).
func matchParam(name string) bool { return strings.Contains(strings.ToLower(name), "match") }

// wildcardIn returns a description of the first precondition in req whose
// value a service would read as a wildcard or a list, or "".
func wildcardIn(req *http.Request) string {
	bad := func(v string) bool {
		return strings.ContainsAny(v, "*,") || strings.HasPrefix(strings.TrimSpace(v), "W/")
	}
	for name, vals := range req.Header {
		for _, v := range vals {
			if matchParam(name) && bad(v) {
				return fmt.Sprintf("%s %s with header %s: %s", req.Method, req.URL.Path, name, v)
			}
		}
	}
	q, _ := url.ParseQuery(req.URL.RawQuery)
	for name, vals := range q {
		for _, v := range vals {
			if matchParam(name) && bad(v) {
				return fmt.Sprintf("%s %s with query parameter %s=%s", req.Method, req.URL.Path, name, v)
			}
		}
	}
	return ""
}

func wildcardNeverSent(ctx context.Context, s *scope) error {
	var (
		c     sentCounter
		mu    sync.Mutex
		armed bool
		seen  string
	)
	tr := &wirefault.Transport{Sent: func(r *http.Request) {
		c.sent(r)
		mu.Lock()
		defer mu.Unlock()
		if armed && seen == "" {
			seen = wildcardIn(r)
		}
	}}
	wb, err := s.wire(tr)
	if err != nil {
		return err
	}
	k := s.key("obj")
	v, err := seed(ctx, wb, k, []byte("one"))
	if err != nil {
		return err
	}
	if err := throughHook(&c, 0, "Put IfAbsent"); err != nil {
		return err
	}
	for _, w := range []driver.Version{"*", `"*"`, v + "," + objects.FakeVersion(v), v + ", *", "W/" + v} {
		mu.Lock()
		armed = true
		mu.Unlock()
		_, perr := put(ctx, wb, k, []byte("overwritten by "+string(w)), driver.IfMatch(w))
		derr := wb.Delete(ctx, k, driver.IfMatch(w))
		mu.Lock()
		armed = false
		got := seen
		mu.Unlock()
		if got != "" {
			return fmt.Errorf("for IfMatch(%q) the driver sent %s, which services read as matching any version "+
				"(Put: %s; Delete: %s); driver.Begin refuses such a version before anything is sent",
				w, got, outcome(perr), outcome(derr))
		}
		if err := unchanged(ctx, s.b, k, []byte("one"), v); err != nil {
			return fmt.Errorf("after Put and Delete IfMatch(%q): %w", w, err)
		}
	}
	return nil
}

// armedBucket is the bucket Options.Transport returned (or one behind a
// faulty.LostReply), dropping the reply of the first write of the first Put
// of key whose condition sel selects.
type armedBucket struct {
	driver.Bucket
	key   string
	sel   func(driver.Condition) bool
	armed *atomic.Bool
	used  bool
}

func (b *armedBucket) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	if key == b.key && !b.used && b.sel(opts.If) {
		b.used = true
		b.armed.Store(true)
		defer b.armed.Store(false)
	}
	return b.Bucket.Put(ctx, key, data, opts)
}

func leaseLostReplyWire(ctx context.Context, s *scope) error {
	if s.opts.Transport == nil && s.opts.Lossy == nil {
		return leaseLostReplyAtBucket(ctx, s)
	}
	var armed atomic.Bool
	tr := &wirefault.Transport{Drop: func(r *http.Request) bool {
		return wirefault.Write(r) && armed.CompareAndSwap(true, false)
	}}
	wb, err := s.wire(tr)
	if err != nil {
		return err
	}
	return leaseLostReply(ctx, s, wb, &armed, tr.Dropped, "on the wire")
}

// leaseLostReply acquires and renews a lease through b, each with its
// write's reply lost, and requires both recognised as the lease's own.
func leaseLostReply(ctx context.Context, s *scope, b driver.Bucket, armed *atomic.Bool, dropped func() int, where string) error {
	key := admin.Key(s.prefix)
	c := clock.NewFake(leaseStart)
	acq := &armedBucket{Bucket: b, key: key, armed: armed, sel: func(c driver.Condition) bool { return c == driver.IfAbsent() }}
	l, err := s.acquire(ctx, acq, "first", c)
	if dropped() != 1 {
		return fmt.Errorf("setup: no reply was dropped: the acquire (%v) sent no write of %s %s", err, key, where)
	}
	if err != nil {
		return fmt.Errorf("an acquire whose write's reply was lost %s: %v", where, err)
	}
	defer l.Release(ctx)
	if err := holds(ctx, s.b, s.prefix, "first"); err != nil {
		return err
	}
	// The renewal goes through the same bucket, so arm it afresh.
	acq.used = false
	acq.sel = func(cond driver.Condition) bool { _, ok := cond.Match(); return ok }
	c.Advance(leaseTTL / 3)
	if err := leaseseam.Renew(ctx, l); err != nil {
		return fmt.Errorf("a renewal whose write's reply was lost %s: %v; want it recognised as ours", where, err)
	}
	if dropped() != 2 {
		return fmt.Errorf("setup: no reply of the renewal was dropped: it sent no write %s", where)
	}
	if err := leaseseam.Renew(ctx, l); err != nil {
		return fmt.Errorf("the next renewal: %v", err)
	}
	if !l.MayWrite() {
		return errors.New("the lease is fenced after renewals recognised as ours")
	}
	return holds(ctx, s.b, s.prefix, "first")
}
