package drivertest

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
)

// CheckOnly runs the named checks of the suite, in the suite's order and
// each exactly as Check runs it, and nothing else: a negative control
// proves that one check fails a broken driver, and a run of the other
// seventy checks against that driver (two full runs' time under -race
// each) proves nothing more. It panics on a name that is no check, so a
// control cannot go quiet by naming a check that does not exist.
func CheckOnly(ctx context.Context, b driver.Bucket, opts Options, names ...string) *Report {
	for _, n := range names {
		if !hasCheck(n) {
			panic(fmt.Sprintf("drivertest.CheckOnly: %q is not a check", n))
		}
	}
	var cs []check
	for _, c := range checks {
		if slices.Contains(names, c.name) {
			cs = append(cs, c)
		}
	}
	opts.inTest = true
	return checkAll(ctx, b, opts, cs)
}

// CheckThrough runs the suite's checks in order up to and including last,
// as Check runs them: for a control that a check is the first to fail.
func CheckThrough(ctx context.Context, b driver.Bucket, opts Options, last string) *Report {
	i := slices.IndexFunc(checks, func(c check) bool { return c.name == last })
	if i < 0 {
		panic(fmt.Sprintf("drivertest.CheckThrough: %q is not a check", last))
	}
	return checkAll(ctx, b, opts, checks[:i+1])
}

// The negative controls' buckets (mem, file, hand-made ones) list a
// pending upload at once and its abort at once: a listing that lags is
// the real services' (pendingGrace), and waiting it out for every upload
// a broken driver leaves costs seconds per control.
func init() { pendingGrace = 300 * time.Millisecond }
