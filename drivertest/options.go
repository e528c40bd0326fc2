package drivertest

import (
	"context"
	"net/http"
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
	// passes the run fails, so that a stale entry is noticed. Check names
	// (Names) are part of this package's API for this reason: a check is
	// never renamed without its old name staying accepted here.
	KnownDeviations map[string]string

	// Timeout bounds each check. Default one minute.
	Timeout time.Duration

	// MissingBucket is the driver under test opened on a bucket (container,
	// directory) that does not exist, for the missing-bucket check; nil
	// skips that check.
	MissingBucket driver.Bucket

	// WrongCredentials is the driver under test opened on the same bucket
	// with credentials the service refuses, for the wrong-credentials
	// check; nil skips that check.
	WrongCredentials driver.Bucket

	// Transport, if set, opens the driver under test on the same bucket as
	// the one under test, with its client's HTTP transport replaced by rt.
	// rt forwards every request to the service through
	// http.DefaultTransport; the wire checks have it throw a reply away
	// after the service acted on it (as a dropped connection does), remove
	// a header from replies, or watch what is sent, so that they see the
	// driver through its real client library (put-retry-after-landed,
	// version-header-missing, wildcard-never-sent, lease-lost-reply-wire).
	// The suite closes the bucket it returns (bucket.Bucket.Close) when the check
	// ends. nil skips those checks.
	Transport func(rt http.RoundTripper) (driver.Bucket, error)

	// BucketFaults, for a driver that sends no HTTP request (its store is
	// memory, files, or a database or socket of its own, so Transport has
	// nothing to sit under), runs the checks of a lost reply, a refused
	// retry and a cancelled write with the fault put where the driver
	// meets its caller: lease-lost-reply-wire loses the replies of an
	// acquire's and a renewal's writes that the driver applied
	// (faulty.LostReply); put-retry-after-landed sends a conditional
	// write again after its first attempt landed, and requires the
	// driver to refuse the retry and keep the landed object;
	// put-canceled-mid-body cancels a Put's context once the driver is
	// under way (at its first look at the context after driver.Begin's).
	// A driver that sends HTTP sets Transport instead, which puts each
	// fault under its real client library; Transport, where set, wins.
	BucketFaults bool

	// Lossy is the former name of Transport, used when Transport is nil.
	//
	// Deprecated: set Transport, the same hook; Lossy will be removed in
	// the next release.
	Lossy func(rt http.RoundTripper) (driver.Bucket, error)

	// URL names the bucket under test for bucket.Open (its driver's scheme
	// registered in the test binary, credentials from the environment),
	// for the check exclusion-across-processes: it runs the test that
	// called Run again in several child processes (the test binary,
	// os.Executable, started with -test.run selecting the check and with
	// this process's environment, not its command-line flags), each
	// opening a bucket of its own from URL, and races conditional writes
	// between them. The children use the suite's keys as they are, so the
	// URL's prefix does not matter, but it must name the same bucket as
	// the one under test (a child that cannot read a key the suite wrote
	// fails the check). "" skips the check, and so does a mem:// URL,
	// whose bucket lives inside one process. Check, outside a test, skips
	// it too.
	URL string

	// Pending, for a driver that is no multipart.PendingLister, returns the
	// uploads staged for key and neither committed nor aborted (their
	// names, as the service gives them), found by the author's own means
	// (the service's API, the directory a local driver stages in). The
	// checks of a failed streamed write use it, as they use ListPending
	// where the driver has it, to prove that what the write staged was
	// removed, or is left only where the write's *multipart.UploadError
	// declares it left (Staged, not Aborted, no AbortErr: the service has
	// no call that removes it). Without either, the suite sees only what
	// Get and List show, and stream-failed-leaves-nothing reports itself
	// skipped. A driver that stages nothing (driver.PutWhole) passes a
	// Pending that returns none.
	Pending func(ctx context.Context, key string) ([]string, error)

	// inTest, set by the package's own tests, runs under Check what only
	// Run runs otherwise (stream-memory-bounded).
	inTest bool
}
