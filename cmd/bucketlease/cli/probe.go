package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/bounded"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/exitcode"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/report"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/file"
	"github.com/mushroomdb/bucketlease/drivertest"
	"github.com/mushroomdb/bucketlease/internal/location"
	"github.com/mushroomdb/bucketlease/lease"
)

var probeCommand = &command{
	name:    "probe",
	args:    "URL [--json] [--timeout D]",
	summary: "test whether the service gives the exclusion its driver declares",
	help: `Runs the conformance suite of package drivertest against the service, on
scratch keys under {prefix}/bucketlease-probe/ that are removed afterwards (the
lease object itself is not touched): every precondition the lease relies on
(If-None-Match: *, If-Match with a stale, a made-up and a missing version, on
small and 17 MiB bodies), concurrent writers, conditional delete, and the
lease's own scenarios. It prints each check and whether it passed, what a
conforming service does, and what this one did if not that; then the
exclusion the driver declares and the one the service really gives. On
file:// the file driver's empty lock files for the scratch keys stay in
{dir}/.bucketlease/locks (it never removes one); probe says how many.

Before the checks, probe reads and writes one scratch key: if the service
cannot be used at all (wrong credentials, a missing bucket, a read-only
directory, the network, --timeout too short), the verdict is "error": probe
prints the cause and exits 1, since an error is no evidence about
preconditions. So does a check that ran out of time, or whose operations
could not complete (a reset connection, a body cut short, a server error):
its row says "inconclusive" and shows the error. After such a check, probe
waits a second and removes what writes it gave up on left under
{prefix}/bucketlease-probe/ once they landed (where the driver can list).

The verdicts, and the exit code of each:
  conditional                 0  every check passed; the service gives the
                                 exclusion its driver declares
  ignores preconditions       5  a write that should have been refused was
                                 accepted: the lease refuses to run here
  does not behave as declared 5  another check failed with no error
  error, inconclusive         1  an operation failed; the error is shown; run
                                 probe again (unless another check showed the
                                 service ignores preconditions: then 5)

A service that ignores preconditions cannot keep a
second writer out: the lease refuses to run on it (set
` + lease.EnvConditional + `=off to run best-effort instead).

Examples:
  bucketlease probe file:///var/backups/db1
  bucketlease probe 's3://my-bucket/backups?region=eu-west-1&endpoint=https://s3.example.com' --json`,
	setup: setupProbe,
}

func setupProbe(fs *flag.FlagSet) runFunc {
	asJSON := fs.Bool("json", false, "print the report as one JSON object")
	timeout := timeoutFlag(fs, time.Minute, "bound on each check")
	return func(ctx context.Context, e *env, args []string) error {
		loc, err := oneLocation(fs, args)
		if err != nil {
			return err
		}
		if err := refuseInProcess("probe", loc); err != nil {
			return err
		}
		// The checks never touch the lease object, but a LEASE that
		// can never be one makes the prefix unusable for the lease.
		b, err := openUnder(ctx, loc)
		if err != nil {
			return err
		}
		prefix := loc.Prefix
		scratch := strings.TrimPrefix(prefix+"/bucketlease-probe", "/")
		locks, locksBefore := fileLocks(loc)
		if !*asJSON {
			removed := "removed afterwards"
			if locks != "" {
				removed += "; their lock files stay, see the end"
			}
			fmt.Fprintf(e.stderr, "probing %s with scratch keys under %s/ (%s)…\n", loc.String(), scratch, removed)
		}
		if err := preflight(ctx, bounded.New(b, *timeout, loc, "--timeout"), strings.TrimPrefix(scratch+"/preflight", "/")); err != nil {
			return explain(loc, fmt.Errorf("probe could not use %s, so it says nothing about its preconditions: %w", loc.String(), err))
		}
		rep := drivertest.Check(ctx, b, drivertest.Options{Prefix: scratch, Timeout: *timeout})
		left := report.Leftovers{Dir: locks}
		if locks != "" {
			_, n := fileLocks(loc)
			left.LockFiles = max(n-locksBefore, 0)
		}
		// A write accepted that should have been refused is evidence,
		// whatever else could not complete: the verdict is the failure.
		if bad := erroredChecks(rep); len(bad) > 0 && rep.Observed == rep.Declared {
			if *asJSON {
				_ = report.WriteJSON(e.stdout, report.ProbeJSON(loc.String(), rep, left))
			} else {
				report.PrintProbe(e.stdout, rep, left)
			}
			return explain(loc, fmt.Errorf("verdict: error, inconclusive, not evidence: checks %s could not complete (an operation failed, or they ran out of time with --timeout %v); their errors are shown above; run probe again",
				strings.Join(bad, ", "), *timeout))
		}
		if *asJSON {
			if err := report.WriteJSON(e.stdout, report.ProbeJSON(loc.String(), rep, left)); err != nil {
				return err
			}
		} else {
			report.PrintProbe(e.stdout, rep, left)
		}
		if !rep.OK() {
			return exitcode.With(exitcode.ProbeFailed, explain(loc, fmt.Errorf("%s does not give the exclusion its driver declares (%s)",
				loc.String(), report.Caps(rep.Declared))))
		}
		return nil
	}
}

// preflight reads and writes key once and removes it, through b, whose
// every request is bounded (bounded.New: a request that times out says
// the URL, the request and the bound): a service that cannot be used at
// all gives an error here, before any check could mistake it for a service
// that ignores preconditions. ctx gets no deadline of its own, which would
// end with the request's and hide which request got no answer.
func preflight(ctx context.Context, b driver.Bucket, key string) error {
	rc, _, err := b.Get(ctx, key, driver.GetOptions{})
	switch {
	case err == nil:
		rc.Close()
	case !errors.Is(err, driver.ErrNotExist):
		return fmt.Errorf("its first request, a read (GET) of the scratch key %s: %w", key, err)
	}
	if _, err := b.Put(ctx, key, []byte("bucketlease probe\n"), driver.PutOptions{}); err != nil {
		return fmt.Errorf("writing the scratch key %s: %w", key, err)
	}
	if err := b.Delete(context.WithoutCancel(ctx), key, driver.Condition{}); err != nil {
		return fmt.Errorf("removing the scratch key %s: %w", key, err)
	}
	return nil
}

// erroredChecks names the failed checks that could not complete (drivertest
// marks them Errored) or ran out of time: their failure says nothing about
// the service's preconditions.
func erroredChecks(rep *drivertest.Report) []string {
	bad := rep.Inconclusive()
	for _, r := range rep.Results {
		if !r.Passed && !r.Skipped && !r.Errored && (strings.Contains(r.Got, context.DeadlineExceeded.Error()) || strings.Contains(r.Got, context.Canceled.Error())) {
			bad = append(bad, r.Name)
		}
	}
	return bad
}

// fileLocks is where the file driver keeps its lock files for a file://
// URL, one per key ever written, and how many there are; "" for another
// scheme.
func fileLocks(loc *location.Location) (string, int) {
	if u := loc.URL(); loc.Scheme == "file" && filepath.IsAbs(u.Path) {
		return file.LockFiles(u.Path)
	}
	return "", 0
}
