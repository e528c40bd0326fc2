package drivertest

import (
	"context"
	"net/http"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
)

// Options tune a run of the suite. The zero value is usable.
type Options struct {
	// Prefix is the key prefix for the suite's scratch keys, below which a
	// random run id is added. Default "drivertest".
	Prefix string

	// KnownDeviations names checks the service is known to fail, each with
	// the reason. Such a check still runs; its failure is reported as a
	// deviation, and its passing fails the run, so a stale entry is noticed.
	KnownDeviations map[string]string

	// Timeout bounds each check. Default one minute.
	Timeout time.Duration

	// MissingBucket is the driver opened on a bucket that does not exist;
	// nil skips missing-bucket.
	MissingBucket driver.Bucket

	// WrongCredentials is the driver opened on the same bucket with
	// credentials the service refuses; nil skips wrong-credentials.
	WrongCredentials driver.Bucket

	// Transport opens the driver on the same bucket with its client's HTTP
	// transport replaced by rt, which forwards to the service and lets the
	// wire checks drop, alter or watch replies under the real client
	// library. The suite closes the returned bucket when the check ends.
	// nil skips those checks.
	Transport func(rt http.RoundTripper) (driver.Bucket, error)

	// BucketFaults, for a driver that sends no HTTP request, runs the
	// lost-reply, refused-retry and cancelled-write checks with the fault
	// placed where the driver meets its caller (see docs/drivers.md).
	// Transport, where set, wins.
	BucketFaults bool

	// Lossy is the former name of Transport, used when Transport is nil.
	//
	// Deprecated: set Transport; Lossy will be removed in the next release.
	Lossy func(rt http.RoundTripper) (driver.Bucket, error)

	// URL names the bucket under test for bucket.Open, for
	// exclusion-across-processes: the test that called Run is started
	// again in child processes (this environment, not its flags), each
	// opening URL and racing conditional writes. It must name the same
	// bucket; its prefix does not matter. "" or mem:// skips the check, as
	// does Check.
	URL string

	// Pending, for a driver that is no multipart.PendingLister, returns the
	// uploads staged for key and neither committed nor aborted. The
	// failed-stream checks use it to prove what a write staged was removed
	// or declared left in its *multipart.UploadError. Without it or
	// ListPending, stream-failed-leaves-nothing is skipped. A driver that
	// stages nothing passes one that returns none.
	Pending func(ctx context.Context, key string) ([]string, error)

	// inTest, set by this package's tests, runs Run-only checks under Check.
	inTest bool
}
