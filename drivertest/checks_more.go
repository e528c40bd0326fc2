package drivertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"

	"github.com/mushroomdb/bucketlease/driver"
)

// The checks of the contract's finer points (issue 15): what a missing
// bucket, a wildcard version, a key that is a prefix of another, a
// cancellation in the middle of a body and a retried write whose first
// attempt landed must give.

// moreChecks are the checks of this file; suite.go orders them.
var moreChecks = []check{
	check{
		name:   "get-version",
		expect: "Get never returns an empty version: it returns the version the last Put returned",
		run: func(ctx context.Context, s *scope) error {
			k := s.key("obj")
			v1, err := seed(ctx, s.b, k, []byte("one"))
			if err != nil {
				return err
			}
			for i, want := range []driver.Version{v1, ""} {
				if i == 1 {
					v2, err := s.b.Put(ctx, k, []byte("two"), driver.IfMatch(v1))
					if err != nil {
						return fmt.Errorf("setup: Put IfMatch(current): %s", outcome(err))
					}
					want = v2
				}
				rc, v, err := s.b.Get(ctx, k)
				if err != nil {
					return fmt.Errorf("Get: %s", outcome(err))
				}
				rc.Close()
				if v == "" {
					return errors.New("Get returned success with an empty version: a Get without a version is an error")
				}
				if v != want {
					return fmt.Errorf("Get returned version %q, but the last Put returned %q", v, want)
				}
			}
			return nil
		},
	},
	check{
		name:   "put-if-match-wildcard",
		area:   areaPut,
		expect: `IfMatch of a wildcard or a list ("*", "\"*\"", "v1,v2", W/v, empty) returns ErrPrecondition and changes nothing`,
		run: func(ctx context.Context, s *scope) error {
			k := s.key("obj")
			v, err := seed(ctx, s.b, k, []byte("one"))
			if err != nil {
				return err
			}
			for _, w := range []driver.Version{"*", `"*"`, v + "," + driver.FakeVersion(v), v + ", *",
				driver.FakeVersion(v) + "," + v, "W/" + v, ""} {
				_, err := s.b.Put(ctx, k, []byte("overwritten by "+string(w)), driver.IfMatch(w))
				if err := want(fmt.Sprintf("Put IfMatch(%q)", w), err, driver.ErrPrecondition); err != nil {
					return err
				}
				if err := unchanged(ctx, s.b, k, []byte("one"), v); err != nil {
					return fmt.Errorf("after Put IfMatch(%q): %w", w, err)
				}
				err = s.b.Delete(ctx, k, driver.IfMatch(w))
				if !errors.Is(err, driver.ErrPrecondition) && !errors.Is(err, driver.ErrUnsupported) {
					return fmt.Errorf("Delete IfMatch(%q): %s, want ErrPrecondition (or ErrUnsupported)", w, outcome(err))
				}
				if err := unchanged(ctx, s.b, k, []byte("one"), v); err != nil {
					return fmt.Errorf("after Delete IfMatch(%q): %w", w, err)
				}
			}
			return nil
		},
	},
	check{
		name:   "missing-bucket",
		expect: "on a bucket that does not exist, Get, Put and Delete fail with ErrBucketNotExist, never ErrNotExist, ErrPrecondition or success",
		needs: func(o Options) string {
			if o.MissingBucket == nil {
				return "Options.MissingBucket is not set"
			}
			return ""
		},
		run: missingBucket,
	},
	check{
		name:   "wrong-credentials",
		expect: "with credentials the service refuses, Get, Put and Delete fail with ErrPermission, never ErrNotExist, ErrPrecondition or success",
		needs: func(o Options) string {
			if o.WrongCredentials == nil {
				return "Options.WrongCredentials is not set"
			}
			return ""
		},
		run: wrongCredentials,
	},
	check{
		name: "key-prefix-of-key",
		expect: "a key that is a prefix of another (k and k/x) is stored and read on its own, or refused with ErrInvalidKey; " +
			"a Get of it when missing is ErrNotExist; once the longer key is deleted it can be written",
		run: keyPrefix,
	},
	check{
		name: "put-canceled-mid-body",
		expect: "a Put whose context is cancelled once its request is on the wire returns an error matching " +
			"context.Canceled, and leaves the old object (or, if it landed, the whole new one), never a torn one",
		run: canceledMidBody,
	},
	check{
		name: "put-retry-after-landed",
		expect: "a conditional Put whose first attempt landed but whose reply was lost is never reported as " +
			"ErrPrecondition (a refused retry is ErrOutcomeUnknown) nor ErrNotExist",
		needs: func(o Options) string {
			if o.Lossy == nil {
				return "Options.Lossy is not set"
			}
			return ""
		},
		run: retryAfterLanded,
	},
}

// versionUnguessable writes one key several times and fails if a version
// is FakeVersion of an earlier one: the lease's probe relies on IfMatch of
// a made-up version being refused, and with versions that count up, the
// made-up version is the next real one.
func versionUnguessable(ctx context.Context, s *scope) error {
	k := s.key("obj")
	v, err := seed(ctx, s.b, k, []byte("0"))
	if err != nil {
		return err
	}
	seen := []driver.Version{v}
	for i := 1; i < 5; i++ {
		nv, err := s.b.Put(ctx, k, []byte{byte('0' + i)}, driver.IfMatch(v))
		if err != nil {
			return fmt.Errorf("setup: Put IfMatch(current): %s", outcome(err))
		}
		for _, old := range seen {
			if nv == old {
				return fmt.Errorf("the version %q came back for a later write: versions must be unique per key", nv)
			}
			if nv == driver.FakeVersion(old) {
				return fmt.Errorf("versions are guessable: after %q came %q, which is FakeVersion(%q). "+
					"Rule (driver/doc.go, obligation 5, Versions): a version must not be predictable from an earlier one, "+
					"since the lease's probe expects IfMatch(FakeVersion(v)) to be refused; "+
					"a driver whose versions are counters must scramble them (as the mem driver does)", old, nv, old)
			}
		}
		seen = append(seen, nv)
		v = nv
	}
	return nil
}

func missingBucket(ctx context.Context, s *scope) error {
	mb := s.opts.MissingBucket
	k := s.prefix + "/k"
	isMissing := func(what string, err error) error {
		switch {
		case err == nil:
			return fmt.Errorf("%s on a missing bucket: success", what)
		case errors.Is(err, driver.ErrNotExist):
			return fmt.Errorf("%s on a missing bucket: ErrNotExist, which reads as a missing key (a lease would look free)", what)
		case errors.Is(err, driver.ErrPrecondition):
			return fmt.Errorf("%s on a missing bucket: ErrPrecondition, which reads as a refused condition", what)
		case !errors.Is(err, driver.ErrBucketNotExist):
			return fmt.Errorf("%s on a missing bucket: %s, want ErrBucketNotExist", what, outcome(err))
		}
		return nil
	}
	_, _, err := mb.Get(ctx, k)
	if err := isMissing("Get", err); err != nil {
		return err
	}
	_, err = mb.Put(ctx, k, []byte("x"), driver.IfAbsent())
	if err := isMissing("Put IfAbsent", err); err != nil {
		return err
	}
	v, err := seed(ctx, s.b, s.key("real"), []byte("x"))
	if err != nil {
		return err
	}
	_, err = mb.Put(ctx, k, []byte("x"), driver.IfMatch(v))
	if err := isMissing("Put IfMatch", err); err != nil {
		return err
	}
	return isMissing("Delete", mb.Delete(ctx, k, driver.Condition{}))
}

func wrongCredentials(ctx context.Context, s *scope) error {
	wb := s.opts.WrongCredentials
	k := s.key("k")
	v, err := seed(ctx, s.b, k, []byte("x"))
	if err != nil {
		return err
	}
	refused := func(what string, err error) error {
		switch {
		case err == nil:
			return fmt.Errorf("%s with wrong credentials: success", what)
		case !errors.Is(err, driver.ErrPermission):
			return fmt.Errorf("%s with wrong credentials: %s, want ErrPermission", what, outcome(err))
		case errors.Is(err, driver.ErrNotExist), errors.Is(err, driver.ErrPrecondition):
			return fmt.Errorf("%s with wrong credentials: %s as well as ErrPermission", what, outcome(err))
		}
		return nil
	}
	_, _, err = wb.Get(ctx, k)
	if err := refused("Get", err); err != nil {
		return err
	}
	_, err = wb.Put(ctx, k, []byte("y"), driver.IfMatch(v))
	if err := refused("Put IfMatch", err); err != nil {
		return err
	}
	if err := refused("Delete", wb.Delete(ctx, k, driver.Condition{})); err != nil {
		return err
	}
	return unchanged(ctx, s.b, k, []byte("x"), v)
}

func keyPrefix(ctx context.Context, s *scope) error {
	// The longer key first, then the shorter one.
	short := s.key("a")
	long := s.key("a/b")
	if _, err := seed(ctx, s.b, long, []byte("long")); err != nil {
		return err
	}
	if _, _, err := s.b.Get(ctx, short); !errors.Is(err, driver.ErrNotExist) {
		return fmt.Errorf("Get of %q while %q exists: %s, want ErrNotExist", short, long, outcome(err))
	}
	if err := s.b.Delete(ctx, short, driver.Condition{}); err != nil {
		return fmt.Errorf("Delete of the missing %q while %q exists: %s, want success", short, long, outcome(err))
	}
	stored, err := putPrefixed(ctx, s.b, short, long)
	if err != nil {
		return err
	}
	if err := holdsData(ctx, s.b, long, "long"); err != nil {
		return err
	}
	if stored {
		if err := holdsData(ctx, s.b, short, "short"); err != nil {
			return err
		}
		if err := s.b.Delete(ctx, short, driver.Condition{}); err != nil {
			return fmt.Errorf("Delete %q: %s", short, outcome(err))
		}
	}
	if err := s.b.Delete(ctx, long, driver.Condition{}); err != nil {
		return fmt.Errorf("Delete %q: %s", long, outcome(err))
	}
	if _, err := s.b.Put(ctx, short, []byte("short"), driver.IfAbsent()); err != nil {
		return fmt.Errorf("Put IfAbsent %q once %q is deleted: %s, want success", short, long, outcome(err))
	}
	// The shorter key first, then the longer one.
	long2 := short + "/c"
	s.key("a/c")
	stored, err = putPrefixed(ctx, s.b, long2, short)
	if err != nil {
		return err
	}
	if err := holdsData(ctx, s.b, short, "short"); err != nil {
		return err
	}
	if stored {
		return holdsData(ctx, s.b, long2, "short")
	}
	if _, _, err := s.b.Get(ctx, long2); !errors.Is(err, driver.ErrNotExist) {
		return fmt.Errorf("Get of the refused %q: %s, want ErrNotExist", long2, outcome(err))
	}
	if err := s.b.Delete(ctx, short, driver.Condition{}); err != nil {
		return fmt.Errorf("Delete %q: %s", short, outcome(err))
	}
	if _, err := s.b.Put(ctx, long2, []byte("long"), driver.IfAbsent()); err != nil {
		return fmt.Errorf("Put IfAbsent %q once %q is deleted: %s, want success", long2, short, outcome(err))
	}
	return nil
}

// putPrefixed writes "short" to key while other exists, and reports whether
// it was stored; a refusal must be ErrInvalidKey.
func putPrefixed(ctx context.Context, b driver.Bucket, key, other string) (bool, error) {
	_, err := b.Put(ctx, key, []byte("short"), driver.IfAbsent())
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, driver.ErrInvalidKey):
		return false, nil
	}
	return false, fmt.Errorf("Put IfAbsent %q while %q exists: %s, want success or ErrInvalidKey", key, other, outcome(err))
}

func holdsData(ctx context.Context, b driver.Bucket, key, want string) error {
	got, _, err := read(ctx, b, key)
	if err != nil {
		return fmt.Errorf("Get %q: %s", key, outcome(err))
	}
	if string(got) != want {
		return fmt.Errorf("%q holds %q, want %q", key, clip(got), want)
	}
	return nil
}

// canceledMidBody cancels the context of a large Put as soon as its request
// headers are written, through an HTTP client trace in the context; a
// driver that sends no HTTP request with the caller's context does not
// take part.
func canceledMidBody(ctx context.Context, s *scope) error {
	k := s.key("obj")
	v, err := seed(ctx, s.b, k, []byte("small"))
	if err != nil {
		return err
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), largeSize/16)
	for _, cond := range []driver.Condition{driver.IfMatch(v), driver.IfAbsent()} {
		key := k
		if cond.Absent() {
			key = s.key("new")
		}
		var fired atomic.Bool
		cctx, cancel := context.WithCancel(ctx)
		var once sync.Once
		cctx = httptrace.WithClientTrace(cctx, &httptrace.ClientTrace{
			WroteHeaders: func() { once.Do(func() { fired.Store(true); cancel() }) },
		})
		_, err := s.b.Put(cctx, key, big, cond)
		cancel()
		if !fired.Load() {
			if err != nil {
				return fmt.Errorf("setup: Put (%s): %s", cond, outcome(err))
			}
			return skipped{"the driver sent no HTTP request with the caller's context, so there is no body on the wire to interrupt"}
		}
		if !errors.Is(err, context.Canceled) {
			return fmt.Errorf("Put (%s) cancelled once its headers were written: %s, not context.Canceled", cond, outcome(err))
		}
		got, gv, rerr := read(ctx, s.b, key)
		switch {
		case cond.Absent() && errors.Is(rerr, driver.ErrNotExist):
		case rerr != nil:
			return fmt.Errorf("Get after the cancelled Put (%s): %s", cond, outcome(rerr))
		case bytes.Equal(got, big):
			// It landed before the cancellation reached the service: an
			// unknown outcome, which the error says.
		case !cond.Absent() && bytes.Equal(got, []byte("small")) && gv == v:
		default:
			return fmt.Errorf("after the cancelled Put (%s) the object holds %d bytes (%q): neither the old object nor the whole new one",
				cond, len(got), clip(got))
		}
	}
	return nil
}

// lossyTransport forwards requests to http.DefaultTransport and, once
// armed, throws away the reply of the first write (any method but GET and
// HEAD), after the service acted on it.
type lossyTransport struct {
	mu      sync.Mutex
	armed   bool
	dropped int
}

// errReplyLost is the transport error a dropped reply becomes.
var errReplyLost = errors.New("drivertest: connection reset after the request was sent")

func (t *lossyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	t.mu.Lock()
	drop := t.armed && req.Method != http.MethodGet && req.Method != http.MethodHead
	if drop {
		t.armed = false
		t.dropped++
	}
	t.mu.Unlock()
	if !drop {
		return resp, nil
	}
	_, _ = bytes.NewBuffer(nil).ReadFrom(resp.Body)
	resp.Body.Close()
	return nil, errReplyLost
}

func (t *lossyTransport) arm() {
	t.mu.Lock()
	t.armed, t.dropped = true, 0
	t.mu.Unlock()
}

func (t *lossyTransport) droppedOne() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.dropped == 1
}

func retryAfterLanded(ctx context.Context, s *scope) error {
	tr := &lossyTransport{}
	lb, err := s.opts.Lossy(tr)
	if err != nil {
		return fmt.Errorf("setup: Options.Lossy: %v", err)
	}
	k := s.key("obj")
	v, err := seed(ctx, s.b, k, []byte("before"))
	if err != nil {
		return err
	}
	for _, cond := range []driver.Condition{driver.IfMatch(v), driver.IfAbsent()} {
		key := k
		if cond.Absent() {
			key = s.key("new")
		}
		tr.arm()
		_, err := lb.Put(ctx, key, []byte("landed"), cond)
		if !tr.droppedOne() {
			return fmt.Errorf("setup: the bucket Options.Lossy returned sent no write through its transport (Put: %s)", outcome(err))
		}
		got, _, rerr := read(ctx, s.b, key)
		if rerr != nil {
			return fmt.Errorf("Get after the write whose reply was lost: %s", outcome(rerr))
		}
		if string(got) != "landed" {
			return fmt.Errorf("setup: the write whose reply was lost did not land (the object holds %q)", clip(got))
		}
		switch {
		case errors.Is(err, driver.ErrPrecondition):
			return fmt.Errorf("Put (%s) whose first attempt landed: ErrPrecondition, which says the object was left as it was; "+
				"a refusal after the client library retried is ErrOutcomeUnknown (driver.Op.Fail does this)", cond)
		case errors.Is(err, driver.ErrNotExist):
			return fmt.Errorf("Put (%s) whose first attempt landed: ErrNotExist", cond)
		}
	}
	return nil
}
