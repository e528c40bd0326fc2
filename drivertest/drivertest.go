package drivertest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
)

// Options tune a run of the suite. The zero value is usable.
type Options struct {
	// Prefix is the key prefix under which the suite makes its scratch
	// keys; a random run id is added below it. Default "drivertest".
	Prefix string

	// KnownDeviations names checks that the service under test is known to
	// fail, each with the reason (for example an emulator that ignores a
	// condition the real service honours). Such a check still runs; its
	// failure is reported as a deviation rather than a failure, and if it
	// passes the run fails, so that a stale entry is noticed.
	KnownDeviations map[string]string

	// Timeout bounds each check. Default one minute.
	Timeout time.Duration
}

// Result is the outcome of one check.
type Result struct {
	Name      string // the check's name, such as "put-if-match-stale"
	Expect    string // what a conforming service does
	Got       string // what this service did
	Passed    bool
	Skipped   bool   // the check does not apply to the declared capabilities
	Deviation string // the known-deviation reason, when a listed check failed
}

// Report is the outcome of a run of the suite.
type Report struct {
	// Declared is what the driver claims.
	Declared driver.Capabilities
	// Observed is what the checks showed: Exclusion drops to NoExclusion
	// if any put precondition was not enforced, and ConditionalDelete is
	// true only if declared and every conditional delete check passed.
	Observed driver.Capabilities
	Results  []Result
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
	run     func(ctx context.Context, s *scope) error
}

// area says which declared capability a failing check disproves.
type area int

const (
	areaBasic  area = iota // the contract itself
	areaPut                // precondition enforcement on Put
	areaDelete             // precondition enforcement on Delete
)

// checks is the suite, in the order it runs. Lease scenarios are appended by
// lease.go.
var checks []check

// scope is one check's view of the bucket: its own keys, removed afterwards.
type scope struct {
	b      driver.Bucket
	prefix string
	mu     sync.Mutex
	keys   []string
}

// key returns a scratch key for this check and remembers it for cleanup.
func (s *scope) key(name string) string {
	k := s.prefix + "/" + name
	s.mu.Lock()
	if !slices.Contains(s.keys, k) {
		s.keys = append(s.keys, k)
	}
	s.mu.Unlock()
	return k
}

func (s *scope) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, k := range s.keys {
		_ = s.b.Delete(ctx, k, driver.Condition{})
	}
}

// Check runs the suite against b and returns the report. It never panics on
// a misbehaving driver; each check's failure is described in its Result.
func Check(ctx context.Context, b driver.Bucket, opts Options) *Report {
	rep := &Report{Declared: b.Capabilities()}
	rep.Observed = rep.Declared
	for _, c := range checks {
		rep.Results = append(rep.Results, runCheck(ctx, b, opts, c, rep))
	}
	return rep
}

// Run runs the suite against b as subtests of t, one per check. A check
// listed in opts.KnownDeviations is logged rather than failed when it fails,
// and fails when it passes.
func Run(t *testing.T, b driver.Bucket, opts Options) {
	t.Helper()
	rep := &Report{Declared: b.Capabilities()}
	rep.Observed = rep.Declared
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			res := runCheck(t.Context(), b, opts, c, rep)
			switch {
			case res.Skipped:
				t.Skipf("does not apply: the driver declares %+v", rep.Declared)
			case res.Deviation != "":
				t.Logf("KNOWN DEVIATION (%s): expected %s; got %s", res.Deviation, res.Expect, res.Got)
			case !res.Passed:
				t.Errorf("expected %s; got %s", res.Expect, res.Got)
			}
		})
	}
	for name := range opts.KnownDeviations {
		if !hasCheck(name) {
			t.Errorf("KnownDeviations names %q, which is not a check", name)
		}
	}
}

func hasCheck(name string) bool {
	for _, c := range checks {
		if c.name == name {
			return true
		}
	}
	return false
}

// Names returns the names of the suite's checks, in order.
func Names() []string {
	names := make([]string, len(checks))
	for i, c := range checks {
		names[i] = c.name
	}
	return names
}

func runCheck(ctx context.Context, b driver.Bucket, opts Options, c check, rep *Report) Result {
	res := Result{Name: c.name, Expect: c.expect}
	if c.applies != nil && !c.applies(rep.Declared) {
		res.Skipped = true
		res.Got = "not applicable"
		return res
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
	s := &scope{b: b, prefix: strings.Trim(prefix, "/") + "/" + runID() + "/" + c.name}
	defer s.cleanup()
	err := safely(func() error { return c.run(ctx, s) })
	res.Passed = err == nil
	if err == nil {
		res.Got = "as expected"
	} else {
		res.Got = err.Error()
	}
	reason, known := opts.KnownDeviations[c.name]
	switch {
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

// outcome names what an error means in the contract's terms.
func outcome(err error) string {
	switch {
	case err == nil:
		return "success"
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
	if target == nil {
		if err != nil {
			return fmt.Errorf("%s: %s", what, outcome(err))
		}
		return nil
	}
	if !errors.Is(err, target) {
		return fmt.Errorf("%s: %s", what, outcome(err))
	}
	return nil
}

// read returns the object's bytes and version.
func read(ctx context.Context, b driver.Bucket, key string) ([]byte, driver.Version, error) {
	rc, v, err := b.Get(ctx, key)
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
	v, err := b.Put(ctx, key, data, driver.IfAbsent())
	if err != nil {
		return "", fmt.Errorf("setup: Put IfAbsent on a new key: %s", outcome(err))
	}
	if v == "" {
		return "", errors.New("setup: Put returned an empty version")
	}
	return v, nil
}

func clip(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}

func conditional(c driver.Capabilities) bool { return c.Exclusion == driver.Conditional }
func condDelete(c driver.Capabilities) bool  { return c.ConditionalDelete }
func noCondDelete(c driver.Capabilities) bool {
	return !c.ConditionalDelete
}
