package drivertest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/mem"
	"github.com/mushroomdb/bucketlease/drivertest"
	"github.com/mushroomdb/bucketlease/drivertest/faulty"
	"github.com/mushroomdb/bucketlease/internal/objects"
)

// The negative controls of the checks of failures, keys and the wire: for
// each, a deliberately wrong driver that the check catches, and for the
// checks that need HTTP, a correct driver over the same loopback service
// that passes them.

// failedChecks runs the checks named in only (the whole suite if none) in
// report mode and returns the checks that failed (deviations aside). A
// negative control names the checks it is about: the rest of the suite
// proves nothing of the broken driver and, under -race, costs a full
// run's time for every control.
func failedChecks(t *testing.T, b driver.Bucket, opts drivertest.Options, only ...string) (map[string]string, *drivertest.Report) {
	t.Helper()
	rep := reportOf(b, opts, only...)
	return failuresOf(rep), rep
}

// reportOf runs the checks named in only, or the whole suite if none.
func reportOf(b driver.Bucket, opts drivertest.Options, only ...string) *drivertest.Report {
	if len(only) == 0 {
		return drivertest.Check(context.Background(), b, opts)
	}
	return drivertest.CheckOnly(context.Background(), b, opts, only...)
}

// failuresOf returns the checks of rep that failed (deviations aside).
func failuresOf(rep *drivertest.Report) map[string]string {
	failed := map[string]string{}
	for _, r := range rep.Results {
		if !r.Passed && !r.Skipped && r.Deviation == "" {
			failed[r.Name] = r.Got
		}
	}
	return failed
}

// namesWith returns the suite's checks whose names start with prefix.
func namesWith(prefix string) []string {
	var out []string
	for _, n := range drivertest.Names() {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	return out
}

// mustCatch fails unless check failed, with a message containing want.
func mustCatch(t *testing.T, failed map[string]string, check, want string) {
	t.Helper()
	got, ok := failed[check]
	if !ok {
		t.Fatalf("check %s passed against a driver built to fail it (failed: %v)", check, keys(failed))
	}
	if !strings.Contains(got, want) {
		t.Errorf("check %s failed with %q, want it to say %q", check, got, want)
	}
}

func keys(m map[string]string) []string {
	var k []string
	for n := range m {
		k = append(k, n)
	}
	return k
}

// noCaps declares nothing: the zero Capabilities.
type noCaps struct{ *mem.Bucket }

func (noCaps) Capabilities() driver.Capabilities { return driver.Capabilities{} }

func TestNoCapabilitiesFailsOnceUpFront(t *testing.T) {
	failed, rep := failedChecks(t, noCaps{mem.New()}, drivertest.Options{}, append(namesWith("lease-"), "capabilities-declared")...)
	mustCatch(t, failed, "capabilities-declared", "declares no exclusion")
	if rep.Results[0].Name != "capabilities-declared" {
		t.Errorf("the first check is %s", rep.Results[0].Name)
	}
	for name := range failed {
		if strings.HasPrefix(name, "lease-") {
			t.Errorf("lease check %s failed too; it should be skipped", name)
		}
	}
}

// counters gives each key versions 1, 2, 3...: guessable by FakeVersion.
type counters struct {
	*mem.Bucket
	mu   sync.Mutex
	n    map[string]int
	real map[string]driver.Version // counter version -> mem version, per key
}

func (c *counters) Get(ctx context.Context, key string, opts driver.GetOptions) (io.ReadCloser, driver.Attrs, error) {
	rc, a, err := c.Bucket.Get(ctx, key, opts)
	if err != nil {
		return rc, a, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for cv, mv := range c.real {
		if mv == a.Version && strings.HasPrefix(cv, key+"#") {
			a.Version = driver.Version(strings.TrimPrefix(cv, key+"#"))
			return rc, a, nil
		}
	}
	return rc, a, nil
}

func (c *counters) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := opts.If.Match(); ok {
		if mv, ok := c.real[key+"#"+string(v)]; ok {
			opts.If = driver.IfMatch(mv)
		} else {
			opts.If = driver.IfMatch("ffffffffffffffff")
		}
	}
	a, err := c.Bucket.Put(ctx, key, data, opts)
	if err != nil {
		return a, err
	}
	c.n[key]++
	cv := strconv.Itoa(c.n[key])
	c.real[key+"#"+cv] = a.Version
	a.Version = driver.Version(cv)
	return a, nil
}

func TestGuessableVersionsFailFirst(t *testing.T) {
	b := &counters{Bucket: mem.New(), n: map[string]int{}, real: map[string]driver.Version{}}
	// Every check up to it, in the suite's order.
	rep := drivertest.CheckThrough(context.Background(), b, drivertest.Options{}, "version-unguessable")
	failed := failuresOf(rep)
	mustCatch(t, failed, "version-unguessable", "must not be predictable")
	// It is the first failure, before any lease check blames the service.
	for _, r := range rep.Results {
		if !r.Passed && !r.Skipped {
			if r.Name != "version-unguessable" {
				t.Errorf("the first failing check is %s (%s), not version-unguessable", r.Name, r.Got)
			}
			break
		}
	}
}

// noVersionOnGet returns an empty version from Get.
type noVersionOnGet struct{ *mem.Bucket }

func (b noVersionOnGet) Get(ctx context.Context, key string, opts driver.GetOptions) (io.ReadCloser, driver.Attrs, error) {
	rc, a, err := b.Bucket.Get(ctx, key, opts)
	a.Version = ""
	return rc, a, err
}

func TestEmptyVersionOnGet(t *testing.T) {
	failed, _ := failedChecks(t, noVersionOnGet{mem.New()}, drivertest.Options{}, "get-version")
	mustCatch(t, failed, "get-version", "empty version")
}

// wildcard sends IfMatch("*") and lists as the services would read them:
// as any version.
type wildcard struct{ *mem.Bucket }

func (b wildcard) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	if v, ok := opts.If.Match(); ok && strings.ContainsAny(string(v), "*,") {
		opts.If = driver.Condition{}
	}
	return b.Bucket.Put(ctx, key, data, opts)
}

func TestWildcardVersion(t *testing.T) {
	failed, rep := failedChecks(t, wildcard{mem.New()}, drivertest.Options{}, "put-if-match-wildcard")
	mustCatch(t, failed, "put-if-match-wildcard", "IfMatch")
	if rep.Observed.Exclusion != driver.NoExclusion {
		t.Errorf("observed %v after a wildcard overwrote the object", rep.Observed.Exclusion)
	}
}

func TestMissingBucketAsMissingKey(t *testing.T) {
	failed, _ := failedChecks(t, mem.New(), drivertest.Options{MissingBucket: mem.New()}, "missing-bucket")
	mustCatch(t, failed, "missing-bucket", "ErrNotExist, which reads as a missing key")
}

// prefixTrouble behaves like the old file driver: a key that is a prefix of
// a stored key fails with "is a directory".
type prefixTrouble struct {
	*mem.Bucket
	mu     sync.Mutex
	stored map[string]bool
}

func (p *prefixTrouble) blocked(key string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k := range p.stored {
		if strings.HasPrefix(k, key+"/") {
			return true
		}
	}
	return false
}

func (p *prefixTrouble) Get(ctx context.Context, key string, opts driver.GetOptions) (io.ReadCloser, driver.Attrs, error) {
	if p.blocked(key) {
		return nil, driver.Attrs{}, &driver.OpError{Op: "get", Key: key, Err: errors.New("read " + key + ": is a directory")}
	}
	return p.Bucket.Get(ctx, key, opts)
}

func (p *prefixTrouble) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	if p.blocked(key) {
		return driver.Attrs{}, &driver.OpError{Op: "put", Key: key, Err: errors.New("rename: is a directory")}
	}
	v, err := p.Bucket.Put(ctx, key, data, opts)
	if err == nil {
		p.mu.Lock()
		p.stored[key] = true
		p.mu.Unlock()
	}
	return v, err
}

func (p *prefixTrouble) Delete(ctx context.Context, key string, cond driver.Condition) error {
	err := p.Bucket.Delete(ctx, key, cond)
	if err == nil {
		p.mu.Lock()
		delete(p.stored, key)
		p.mu.Unlock()
	}
	return err
}

func TestPrefixKeys(t *testing.T) {
	failed, _ := failedChecks(t, &prefixTrouble{Bucket: mem.New(), stored: map[string]bool{}}, drivertest.Options{}, "key-prefix-of-key")
	mustCatch(t, failed, "key-prefix-of-key", "is a directory")
}

// wireStore is a small object service over HTTP on loopback, backed by a
// mem bucket: PUT /KEY with If-Match or If-None-Match: * answers 200 with
// the ETag, or 412; GET /KEY answers the body with its ETag, or 404. A
// body cut short stores nothing.
func wireStore(t *testing.T, inner *mem.Bucket) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := strings.TrimPrefix(r.URL.Path, "/")
		if r.Method == http.MethodGet {
			data, a, err := objects.ReadAll(r.Context(), inner, key, 1<<30, driver.GetOptions{})
			switch {
			case errors.Is(err, driver.ErrNotExist):
				w.WriteHeader(http.StatusNotFound)
			case err != nil:
				w.WriteHeader(http.StatusInternalServerError)
			default:
				w.Header().Set("ETag", string(a.Version))
				_, _ = w.Write(data)
			}
			return
		}
		data, err := io.ReadAll(r.Body)
		if err != nil {
			return // the client went away mid-body: store nothing
		}
		var cond driver.Condition
		if m := r.Header.Get("If-Match"); m != "" {
			cond = driver.IfMatch(driver.Version(m))
		} else if r.Header.Get("If-None-Match") == "*" {
			cond = driver.IfAbsent()
		}
		a, err := inner.Put(context.Background(), key, data, driver.PutOptions{If: cond})
		switch {
		case errors.Is(err, driver.ErrPrecondition):
			w.WriteHeader(http.StatusPreconditionFailed)
		case err != nil:
			w.WriteHeader(http.StatusInternalServerError)
		default:
			w.Header().Set("ETag", string(a.Version))
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// wireFlaw is what a wireBucket gets wrong.
type wireFlaw int

const (
	wireHonest        wireFlaw = iota
	wirePrecondition           // reports a refused retry as ErrPrecondition
	wireEmptyVersion           // takes a reply without an ETag for an empty version
	wireSendsWildcard          // sends any IfMatch version as it is, "*" included
	wireLostIsSuccess          // reports a write whose reply was lost as a success
)

// wireBucket reads and writes through the wire store with a client that
// retries a write once after a transport error, as SDKs do. An honest one
// uses driver.Op, so a refused retry is ErrOutcomeUnknown, and refuses a
// reply without an ETag; flaw says what a dishonest one gets wrong.
// Deletes go to the bucket directly.
type wireBucket struct {
	*mem.Bucket
	url    string
	client *http.Client
	flaw   wireFlaw
}

// Capabilities are the mem bucket's without metadata, which the wire store
// does not carry.
func (b *wireBucket) Capabilities() driver.Capabilities {
	c := b.Bucket.Capabilities()
	c.Metadata, c.ListMetadata = false, false
	return c
}

func (b *wireBucket) Get(ctx context.Context, key string, _ driver.GetOptions) (io.ReadCloser, driver.Attrs, error) {
	op, err := driver.BeginGet(ctx, "wire", key)
	if err != nil {
		return nil, driver.Attrs{}, err
	}
	req, err := http.NewRequestWithContext(op.Context(), http.MethodGet, b.url+(&url.URL{Path: "/" + key}).EscapedPath(), nil)
	if err != nil {
		return nil, driver.Attrs{}, op.Fail(nil, err)
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return nil, driver.Attrs{}, op.Fail(nil, err)
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		resp.Body.Close()
		return nil, driver.Attrs{}, op.Fail(driver.ErrNotExist, errors.New("404"))
	case resp.StatusCode != http.StatusOK:
		resp.Body.Close()
		return nil, driver.Attrs{}, op.Fail(nil, fmt.Errorf("HTTP %d", resp.StatusCode))
	case resp.Header.Get("ETag") == "" && b.flaw != wireEmptyVersion:
		resp.Body.Close()
		return nil, driver.Attrs{}, op.Fail(nil, errors.New("the reply has no ETag"))
	}
	return resp.Body, driver.Attrs{Version: driver.Version(resp.Header.Get("ETag"))}, nil
}

func (b *wireBucket) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	cond := opts.If
	begin := cond
	if b.flaw == wireSendsWildcard {
		begin = driver.Condition{}
	}
	op, err := driver.BeginPut(ctx, b.Capabilities(), "wire", key, driver.PutOptions{If: begin})
	if err != nil {
		return driver.Attrs{}, err
	}
	sendCtx := ctx
	if b.flaw != wirePrecondition {
		sendCtx = op.Context()
	}
	var resp *http.Response
	for attempt := 0; attempt < 2; attempt++ {
		req, rerr := http.NewRequestWithContext(sendCtx, http.MethodPut, b.url+(&url.URL{Path: "/" + key}).EscapedPath(), bytes.NewReader(data))
		if rerr != nil {
			return driver.Attrs{}, op.Fail(nil, rerr)
		}
		if v, ok := cond.Match(); ok {
			req.Header.Set("If-Match", string(v))
		} else if cond == driver.IfAbsent() {
			req.Header.Set("If-None-Match", "*")
		}
		resp, err = b.client.Do(req)
		if err == nil || ctx.Err() != nil {
			break
		}
		if b.flaw == wireLostIsSuccess {
			return driver.Attrs{Version: objects.FakeVersion(driver.Version(key))}, nil
		}
	}
	if err != nil {
		return driver.Attrs{}, op.Fail(nil, err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		v := resp.Header.Get("ETag")
		if v == "" && b.flaw != wireEmptyVersion {
			return driver.Attrs{}, op.Fail(nil, errors.New("the reply has no ETag"))
		}
		return driver.Attrs{Version: driver.Version(v)}, nil
	case http.StatusPreconditionFailed:
		if b.flaw == wirePrecondition {
			return driver.Attrs{}, &driver.OpError{Op: "put", Key: key, Cond: cond, Kind: driver.ErrPrecondition}
		}
		return driver.Attrs{}, op.Fail(driver.ErrPrecondition, errors.New("412"))
	}
	return driver.Attrs{}, op.Fail(nil, fmt.Errorf("HTTP %d", resp.StatusCode))
}

// wireOptions returns a wireBucket over a new wire store and the options
// whose Transport hook opens another on the same store.
func wireOptions(t *testing.T, inner *mem.Bucket, flaw wireFlaw) (*wireBucket, drivertest.Options) {
	url := wireStore(t, inner)
	b := &wireBucket{Bucket: inner, url: url, client: &http.Client{}, flaw: flaw}
	return b, drivertest.Options{Transport: func(rt http.RoundTripper) (driver.Bucket, error) {
		return &wireBucket{Bucket: inner, url: url, client: &http.Client{Transport: rt}, flaw: flaw}, nil
	}}
}

// wireChecks are the checks that need Options.Transport.
var wireChecks = []string{"put-retry-after-landed", "version-header-missing", "wildcard-never-sent", "lease-lost-reply-wire"}

// TestWireDriverConforms is the positive control: an honest driver over the
// wire store passes every check, including those that need HTTP.
func TestWireDriverConforms(t *testing.T) {
	b, opts := wireOptions(t, mem.New(), wireHonest)
	// put-canceled-settles sends eight 17 MiB bodies over loopback; under
	// -race on a loaded machine that has taken longer than the default
	// minute, which is the check running out of time, not evidence.
	opts.Timeout = 5 * time.Minute
	failed, rep := failedChecks(t, b, opts)
	if len(failed) > 0 {
		t.Fatalf("an honest driver failed %v", failed)
	}
	for _, r := range rep.Results {
		if (slices.Contains(wireChecks, r.Name) || r.Name == "put-canceled-mid-body") && (r.Skipped || !r.Passed) {
			t.Errorf("%s did not run: %s", r.Name, r.Got)
		}
	}
}

// TestDeprecatedLossyStillWorks: Options.Lossy, the former name of
// Options.Transport, still runs the wire checks.
func TestDeprecatedLossyStillWorks(t *testing.T) {
	b, opts := wireOptions(t, mem.New(), wireHonest)
	opts.Lossy, opts.Transport = opts.Transport, nil
	failed, rep := failedChecks(t, b, opts, wireChecks...)
	if len(failed) > 0 {
		t.Fatalf("an honest driver failed %v", failed)
	}
	for _, r := range rep.Results {
		if slices.Contains(wireChecks, r.Name) && (r.Skipped || !r.Passed) {
			t.Errorf("%s did not run with Options.Lossy: %s", r.Name, r.Got)
		}
	}
}

// TestWireChecksNotRunWithoutTransport: without the hook, each wire check
// says what it needs rather than passing.
func TestWireChecksNotRunWithoutTransport(t *testing.T) {
	rep := drivertest.CheckOnly(context.Background(), mem.New(), drivertest.Options{}, wireChecks...)
	for _, r := range rep.Results {
		if slices.Contains(wireChecks, r.Name) && (!r.Skipped || !strings.Contains(r.Got, "Options.Transport is not set")) {
			t.Errorf("%s without Options.Transport: %s (%s)", r.Name, r.Status(), r.Got)
		}
	}
}

func TestRetriedRefusalReportedAsPrecondition(t *testing.T) {
	b, opts := wireOptions(t, mem.New(), wirePrecondition)
	failed, _ := failedChecks(t, b, opts, "put-retry-after-landed")
	mustCatch(t, failed, "put-retry-after-landed", "ErrOutcomeUnknown")
}

// TestReplyWithoutETagAccepted: a driver that takes a reply without an ETag
// for an empty version.
func TestReplyWithoutETagAccepted(t *testing.T) {
	b, opts := wireOptions(t, mem.New(), wireEmptyVersion)
	failed, _ := failedChecks(t, b, opts, "version-header-missing")
	mustCatch(t, failed, "version-header-missing", "empty version")
}

// TestWildcardSent: a driver that sends IfMatch("*") as If-Match: *.
func TestWildcardSent(t *testing.T) {
	b, opts := wireOptions(t, mem.New(), wireSendsWildcard)
	failed, _ := failedChecks(t, b, opts, "wildcard-never-sent")
	mustCatch(t, failed, "wildcard-never-sent", "header If-Match: *")
}

// TestLostReplyReportedAsSuccess: a driver that reports a write whose
// reply was lost as a success, with a version it made up.
func TestLostReplyReportedAsSuccess(t *testing.T) {
	b, opts := wireOptions(t, mem.New(), wireLostIsSuccess)
	failed, _ := failedChecks(t, b, opts, "lease-lost-reply-wire")
	mustCatch(t, failed, "lease-lost-reply-wire", "an acquire whose write's reply was lost")
}

// tornOnCancel stores the part of the body "sent" before its context was
// cancelled, as a driver that streams into the object in place would.
type tornOnCancel struct{ *mem.Bucket }

func (b tornOnCancel) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	if tr := httptrace.ContextClientTrace(ctx); tr != nil && tr.WroteHeaders != nil {
		tr.WroteHeaders()
	}
	if err := ctx.Err(); err != nil {
		_, _ = b.Bucket.Put(context.Background(), key, data[:len(data)/2], driver.PutOptions{})
		return driver.Attrs{}, &driver.OpError{Op: "put", Key: key, Cond: opts.If, Err: err}
	}
	return b.Bucket.Put(ctx, key, data, opts)
}

func TestTornBodyOnCancel(t *testing.T) {
	failed, _ := failedChecks(t, tornOnCancel{mem.New()}, drivertest.Options{}, "put-canceled-mid-body")
	mustCatch(t, failed, "put-canceled-mid-body", "neither the old object nor the whole new one")
}

// ignoresCancel finishes a write whatever its context says once it is on
// the wire, and reports success.
type ignoresCancel struct{ *mem.Bucket }

func (b ignoresCancel) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	if tr := httptrace.ContextClientTrace(ctx); tr != nil && tr.WroteHeaders != nil {
		tr.WroteHeaders()
	}
	return b.Bucket.Put(context.WithoutCancel(ctx), key, data, opts)
}

func TestCancelIgnored(t *testing.T) {
	failed, _ := failedChecks(t, ignoresCancel{mem.New()}, drivertest.Options{}, "put-canceled-mid-body")
	mustCatch(t, failed, "put-canceled-mid-body", "not context.Canceled")
}

// TestOldCheckNameStillAccepted: put-large-if-match-stale was renamed
// put-large-refused; a KnownDeviations entry under the old name still
// applies.
func TestOldCheckNameStillAccepted(t *testing.T) {
	rep := drivertest.CheckOnly(context.Background(), mem.New(), drivertest.Options{
		KnownDeviations: map[string]string{"put-large-if-match-stale": "pretend"}}, "put-large-refused")
	for _, r := range rep.Results {
		if r.Name == "put-large-refused" && r.Passed {
			t.Fatal("the old name's deviation entry was ignored: a passing check listed as deviating must fail")
		}
	}
}

// TestFailuresReportedAtCallersLine runs, in a child process, a Run that
// fails, and requires the failure to be reported at the line of the
// caller's test (this file), not at a line inside drivertest.
func TestFailuresReportedAtCallersLine(t *testing.T) {
	if os.Getenv("BUCKETLEASE_DRIVERTEST_FAILING_RUN") == "1" {
		drivertest.Run(t, noCaps{mem.New()}, drivertest.Options{}) // the line failures must point at
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestFailuresReportedAtCallersLine$", "-test.v")
	cmd.Env = append(os.Environ(), "BUCKETLEASE_DRIVERTEST_FAILING_RUN=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the failing run passed:\n%s", out)
	}
	_, file, line, _ := runtime.Caller(0)
	want := fmt.Sprintf("%s:%d:", filepath.Base(file), line-9)
	if !strings.Contains(string(out), want) {
		t.Fatalf("the failure is not reported at %s:\n%s", want, out)
	}
	for _, inside := range []string{"drivertest.go:", "get.go:", "put.go:", "versions.go:", "delete.go:", "failures.go:", "keys.go:", "lease.go:", "cancel.go:", "stream.go:", "streamcommit.go:", "streamfail.go:", "list.go:", "suite.go:", "servicetime.go:", "metadata.go:", "bucketfault.go:", "streammem.go:"} {
		if strings.Contains(string(out), inside) {
			t.Errorf("a failure is reported inside drivertest (%s):\n%s", inside, out)
		}
	}
}

func TestWrongCredentialsNotPermission(t *testing.T) {
	inner := mem.New()
	// A "wrong credentials" bucket that reads the same objects: the
	// service did not refuse anything.
	failed, _ := failedChecks(t, inner, drivertest.Options{WrongCredentials: inner}, "wrong-credentials")
	mustCatch(t, failed, "wrong-credentials", "success")
	// One that says the key is missing.
	failed, _ = failedChecks(t, inner, drivertest.Options{WrongCredentials: mem.New()}, "wrong-credentials")
	mustCatch(t, failed, "wrong-credentials", "ErrNotExist")
}

// skewedTime reports the service's time of the bucket underneath with
// shift applied: to the modification time a Get reports (modified), or to
// every Date (date).
type skewedTime struct {
	*mem.Bucket
	modified, date time.Duration
}

// shifted returns st with the shifts applied.
func (b skewedTime) shifted(st driver.ServiceTime) driver.ServiceTime {
	if st.Date.IsZero() {
		return st
	}
	st.Date = st.Date.Add(b.date)
	if !st.Modified.IsZero() {
		st.Modified = st.Modified.Add(b.modified)
	}
	return st
}

func (b skewedTime) Get(ctx context.Context, key string, opts driver.GetOptions) (io.ReadCloser, driver.Attrs, error) {
	rc, a, err := b.Bucket.Get(ctx, key, opts)
	a.Time = b.shifted(a.Time)
	return rc, a, err
}

func (b skewedTime) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	a, err := b.Bucket.Put(ctx, key, data, opts)
	a.Time = b.shifted(a.Time)
	return a, err
}

// TestImplausibleServiceTime: a driver whose Get reports a modification
// time an hour off its Date, either way, or a Date a day off the machine's
// clock, fails service-time.
func TestImplausibleServiceTime(t *testing.T) {
	for _, tc := range []struct {
		name           string
		modified, date time.Duration
		want           string
	}{
		{"modified an hour early", -time.Hour, 0, "the modification time is not the latest write's"},
		{"modified an hour late", time.Hour, 0, "after the answer's Date"},
		{"dates a day off", 0, 24 * time.Hour, "from this machine's clock"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			failed, _ := failedChecks(t, skewedTime{Bucket: mem.New(), modified: tc.modified, date: tc.date}, drivertest.Options{}, "service-time")
			mustCatch(t, failed, "service-time", tc.want)
		})
	}
}

// quietOnRefusal reports the service's time for answers that succeeded
// and nothing for a refusal or a missing key.
type quietOnRefusal struct{ *mem.Bucket }

func (b quietOnRefusal) Get(ctx context.Context, key string, opts driver.GetOptions) (io.ReadCloser, driver.Attrs, error) {
	rc, a, err := b.Bucket.Get(ctx, key, opts)
	if err != nil {
		a.Time = driver.ServiceTime{}
	}
	return rc, a, err
}

func (b quietOnRefusal) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	a, err := b.Bucket.Put(ctx, key, data, opts)
	if err != nil {
		a.Time = driver.ServiceTime{}
	}
	return a, err
}

// TestServiceTimeOnEveryAnswer: a driver that reports the service's time
// for successes only fails service-time-refused; one that reports none has
// both checks skipped, saying so, since reporting is optional.
func TestServiceTimeOnEveryAnswer(t *testing.T) {
	failed, _ := failedChecks(t, quietOnRefusal{mem.New()}, drivertest.Options{}, "service-time", "service-time-refused")
	mustCatch(t, failed, "service-time-refused", "a Get of a missing key")
	if got, ok := failed["service-time"]; ok {
		t.Errorf("service-time failed for a driver that reports every success plausibly: %s", got)
	}

	_, rep := failedChecks(t, faulty.NoServiceTime(mem.New()), drivertest.Options{}, namesWith("service-time")...)
	for _, r := range rep.Results {
		if strings.HasPrefix(r.Name, "service-time") && (!r.Skipped || !strings.Contains(r.Got, "no service time")) {
			t.Errorf("%s against a driver that reports nothing: %s (%s), want it skipped as no service time", r.Name, r.Status(), r.Got)
		}
	}
}
