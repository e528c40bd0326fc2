package drivertest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
)

// renamed maps old check names to new, for old KnownDeviations entries.
var renamed = map[string]string{
	"put-large-if-match-stale": "put-large-refused",
}

// Result is the outcome of one check.
type Result struct {
	Name      string // the check's name, such as "put-if-match-stale"
	Expect    string // what a conforming service does
	Got       string // what this service did
	Passed    bool
	Skipped   bool   // the check does not apply to the declared capabilities
	Deviation string // the known-deviation reason, when a listed check failed
	// Errored: an operation could not complete (a reset, a 5xx, the check's
	// time running out): inconclusive, no evidence either way.
	Errored bool
}

// Status is the result in one word, as reports print it: "PASS", "FAIL",
// "inconclusive" (Errored), "known deviation" or "skip".
func (r Result) Status() string {
	switch {
	case r.Skipped:
		return "skip"
	case r.Passed:
		return "PASS"
	case r.Errored:
		return "inconclusive"
	case r.Deviation != "":
		return "known deviation"
	default:
		return "FAIL"
	}
}

// Report is the outcome of a run of the suite.
type Report struct {
	// Declared is what the driver claims.
	Declared driver.Capabilities
	// Observed is what the checks showed: NoExclusion if any put precondition
	// was not enforced; ConditionalDelete only if declared and every delete
	// check passed. Errored checks change neither.
	Observed driver.Capabilities
	Results  []Result
}

// Inconclusive returns the names of the checks that could not complete:
// they are evidence of nothing, and a report with any is not OK.
func (r *Report) Inconclusive() []string {
	var names []string
	for _, res := range r.Results {
		if res.Errored {
			names = append(names, res.Name)
		}
	}
	return names
}

// OK reports whether every check passed (known deviations aside) and the
// service gives the exclusion its driver declares.
func (r *Report) OK() bool {
	for _, res := range r.Results {
		if !res.Passed && !res.Skipped && res.Deviation == "" {
			return false
		}
	}
	return r.Observed == r.Declared
}

// A check is one conformance check.
type check struct {
	name    string
	expect  string
	area    area
	applies func(driver.Capabilities) bool // nil: always
	// needs says why the check cannot run with these options, or ""; nil: it can.
	needs func(Options) string
	// inTest: only Run runs it (it starts the test binary again).
	inTest bool
	run    func(ctx context.Context, s *scope) error
}

// skipped is a started check's finding that it does not apply.
type skipped struct{ reason string }

func (s skipped) Error() string { return s.reason }

// notRun is why a check cannot run here at all.
type notRun struct{ reason string }

func (n notRun) Error() string { return n.reason }

// area says which declared capability a failing check disproves.
type area int

const (
	areaBasic  area = iota // the contract itself
	areaPut                // precondition enforcement on Put
	areaDelete             // precondition enforcement on Delete
)

// Check runs the suite against b and returns the report, describing a
// misbehaving driver in its Results. After failures it sweeps late writes.
func Check(ctx context.Context, b driver.Bucket, opts Options) *Report {
	return checkAll(ctx, b, opts, checks)
}

// checkAll runs cs, in order, as Check runs the suite.
func checkAll(ctx context.Context, b driver.Bucket, opts Options, cs []check) *Report {
	rep := &Report{Declared: b.Capabilities()}
	rep.Observed = rep.Declared
	var late lateWrites
	for _, c := range cs {
		rep.Results = append(rep.Results, runCheck(ctx, b, opts, c, "", rep, &late))
	}
	late.sweep(ctx)
	return rep
}

// Run runs the suite against b as subtests of t, one per check. A check in
// opts.KnownDeviations is logged when it fails and fails when it passes. In
// a child of exclusion-across-processes, Run runs only the child's part.
func Run(t *testing.T, b driver.Bucket, opts Options) {
	t.Helper()
	if env, ok := os.LookupEnv(childEnv); ok {
		t.Run(xprocName, func(t *testing.T) {
			t.Helper()
			raceAsChild(t, env)
		})
		return
	}
	rep := &Report{Declared: b.Capabilities()}
	rep.Observed = rep.Declared
	var late lateWrites
	defer late.sweep(t.Context())
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			t.Helper()
			res := runCheck(t.Context(), b, opts, c, t.Name(), rep, &late)
			switch {
			case res.Skipped:
				t.Skip(res.Got)
			case res.Deviation != "":
				t.Logf("KNOWN DEVIATION (%s): expected %s; got %s", res.Deviation, res.Expect, res.Got)
			case !res.Passed:
				t.Errorf("expected %s; got %s", res.Expect, res.Got)
			}
		})
	}
	for name := range opts.KnownDeviations {
		if !hasCheck(name) && !hasCheck(renamed[name]) {
			t.Errorf("KnownDeviations names %q, which is not a check", name)
		}
	}
}

func hasCheck(name string) bool {
	return slices.ContainsFunc(checks, func(c check) bool { return c.name == name })
}

// Names returns the names of the suite's checks, in order. They are API
// (Options.KnownDeviations, the probe's report): a renamed check keeps its
// old name working.
func Names() []string {
	names := make([]string, len(checks))
	for i, c := range checks {
		names[i] = c.name
	}
	return names
}

// runCheck runs c in test under Run ("" under Check).
func runCheck(ctx context.Context, b driver.Bucket, opts Options, c check, test string, rep *Report, late *lateWrites) Result {
	res := Result{Name: c.name, Expect: c.expect}
	if c.applies != nil && !c.applies(rep.Declared) {
		res.Skipped = true
		res.Got = fmt.Sprintf("not applicable: the driver declares %s", describe(rep.Declared))
		return res
	}
	if c.inTest && test == "" {
		res.Skipped = true
		res.Got = "not run: it runs the test that called drivertest.Run again in other processes, so only Run, in a test, runs it"
		return res
	}
	if c.needs != nil {
		if why := c.needs(opts); why != "" {
			res.Skipped = true
			res.Got = "not run: " + why
			return res
		}
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	prefix := opts.Prefix
	if prefix == "" {
		prefix = "drivertest"
	}
	rb, rec := recorded(b)
	s := &scope{b: rb, raw: b, opts: opts, test: test, prefix: strings.Trim(prefix, "/") + "/" + runID() + "/" + c.name}
	defer s.cleanup()
	err := safely(func() error { return c.run(ctx, s) })
	if sk, ok := err.(skipped); ok {
		res.Skipped = true
		res.Got = "not applicable: " + sk.reason
		return res
	}
	if nr, ok := err.(notRun); ok {
		res.Skipped = true
		res.Got = "not run: " + nr.reason
		return res
	}
	res.Passed = err == nil
	if err == nil {
		res.Got = "as expected"
	} else {
		res.Got = err.Error()
	}
	reason, known := opts.KnownDeviations[c.name]
	for old, now := range renamed {
		if r, ok := opts.KnownDeviations[old]; ok && now == c.name && !known {
			reason, known = r, true
		}
	}
	if opErr := rec.failure(); !res.Passed && (opErr != nil || ctx.Err() != nil) {
		res.Errored = true
		if opErr == nil {
			opErr = ctx.Err()
		}
		res.Got += fmt.Sprintf(" [inconclusive: an operation could not complete: %v]", opErr)
	}
	if !res.Passed {
		late.add(s)
	}
	switch {
	case res.Errored:
		// No evidence: Observed stays as declared.
	case known && !res.Passed:
		res.Deviation = reason
	case known && res.Passed:
		res.Passed = false
		res.Got += fmt.Sprintf(" (but it is listed as a known deviation: %q; remove the entry)", reason)
	case !res.Passed && c.area == areaPut:
		rep.Observed.Exclusion = driver.NoExclusion
	case !res.Passed && c.area == areaDelete:
		rep.Observed.ConditionalDelete = false
	}
	return res
}

// safely runs f, turning a panic in the driver into a failed check.
func safely(f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the driver panicked: %v", p)
		}
	}()
	return f()
}

func runID() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// describe renders declared capabilities for a message.
func describe(c driver.Capabilities) string {
	s := fmt.Sprintf("exclusion %s, conditional delete %t", c.Exclusion, c.ConditionalDelete)
	if c.Reason != "" {
		s += " (" + c.Reason + ")"
	}
	return s
}

// outcome names what an error means in the contract's terms.
func outcome(err error) string {
	switch {
	case err == nil:
		return "success"
	case errors.Is(err, driver.ErrOutcomeUnknown):
		return "ErrOutcomeUnknown"
	case errors.Is(err, driver.ErrBucketNotExist):
		return "ErrBucketNotExist"
	case errors.Is(err, driver.ErrPermission):
		return "ErrPermission"
	case errors.Is(err, driver.ErrInvalidKey):
		return "ErrInvalidKey: " + err.Error()
	case errors.Is(err, driver.ErrInvalidMetadata):
		return "ErrInvalidMetadata: " + err.Error()
	case errors.Is(err, driver.ErrPrecondition):
		return "ErrPrecondition"
	case errors.Is(err, driver.ErrNotExist):
		return "ErrNotExist"
	case errors.Is(err, driver.ErrUnsupported):
		return "ErrUnsupported"
	default:
		return "error: " + err.Error()
	}
}

// want fails unless err is target (nil for success).
func want(what string, err, target error) error {
	if !errors.Is(err, target) {
		return fmt.Errorf("%s: %s", what, outcome(err))
	}
	return nil
}

// put writes data under key if cond holds and returns the new version.
func put(ctx context.Context, b driver.Bucket, key string, data []byte, cond driver.Condition) (driver.Version, error) {
	a, err := b.Put(ctx, key, data, driver.PutOptions{If: cond})
	return a.Version, err
}

// get returns the object's body and version.
func get(ctx context.Context, b driver.Bucket, key string) (io.ReadCloser, driver.Version, error) {
	rc, a, err := b.Get(ctx, key, driver.GetOptions{})
	return rc, a.Version, err
}

// read returns the object's bytes and version.
func read(ctx context.Context, b driver.Bucket, key string) ([]byte, driver.Version, error) {
	rc, v, err := get(ctx, b, key)
	if err != nil {
		return nil, "", err
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	return data, v, err
}

// unchanged fails unless key still holds data at version v.
func unchanged(ctx context.Context, b driver.Bucket, key string, data []byte, v driver.Version) error {
	got, gv, err := read(ctx, b, key)
	if err != nil {
		return fmt.Errorf("the object should be unchanged, but Get returned %s", outcome(err))
	}
	if !bytes.Equal(got, data) {
		return fmt.Errorf("the object was changed: it now holds %q, was %q", clip(got), clip(data))
	}
	if gv != v {
		return fmt.Errorf("the object's version changed from %q to %q", v, gv)
	}
	return nil
}

// absent fails unless key does not exist.
func absent(ctx context.Context, b driver.Bucket, key string) error {
	_, _, err := read(ctx, b, key)
	if !errors.Is(err, driver.ErrNotExist) {
		return fmt.Errorf("the key should not exist, but Get returned %s", outcome(err))
	}
	return nil
}

// seed creates key with data and returns its version.
func seed(ctx context.Context, b driver.Bucket, key string, data []byte) (driver.Version, error) {
	v, err := put(ctx, b, key, data, driver.IfAbsent())
	if err != nil {
		return "", fmt.Errorf("setup: Put IfAbsent on a new key: %s", outcome(err))
	}
	if v == "" {
		return "", errors.New("setup: Put returned an empty version")
	}
	return v, nil
}

// overwrite, as setup, writes data over key at v and returns the new version.
func overwrite(ctx context.Context, b driver.Bucket, key string, data []byte, v driver.Version) (driver.Version, error) {
	nv, err := put(ctx, b, key, data, driver.IfMatch(v))
	if err != nil {
		return "", fmt.Errorf("setup: Put IfMatch(current): %s", outcome(err))
	}
	return nv, nil
}

// seedOverwritten writes "one" then "two" to key and returns both versions.
func seedOverwritten(ctx context.Context, b driver.Bucket, key string) (old, cur driver.Version, err error) {
	old, err = seed(ctx, b, key, []byte("one"))
	if err != nil {
		return "", "", err
	}
	cur, err = overwrite(ctx, b, key, []byte("two"), old)
	return old, cur, err
}

func clip(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}

func conditional(c driver.Capabilities) bool  { return c.Exclusion == driver.Conditional }
func condDelete(c driver.Capabilities) bool   { return c.ConditionalDelete }
func noCondDelete(c driver.Capabilities) bool { return !c.ConditionalDelete }
