// Package drivertest is the conformance suite for driver.Bucket
// implementations: what testing/fstest.TestFS is to an fs.FS.
//
// A driver author calls Run from a test of their own, against their own
// service or emulator (a complete example, with a third-party driver in a
// module of its own, is examples/thirdpartydriver in this repository):
//
//	func TestConformance(t *testing.T) {
//		b := openMyBucket(t)
//		drivertest.Run(t, b, drivertest.Options{
//			Prefix:        "ci",
//			MissingBucket: openMyBucketNamed(t, "no-such-bucket"),
//			Transport: func(rt http.RoundTripper) (driver.Bucket, error) {
//				return openMyBucketWithTransport(t, rt), nil
//			},
//			URL: "myscheme://my-test-bucket/ci",
//		})
//	}
//
// Each check proves one of the obligations listed in the driver package's
// documentation, which names the check. The suite does not trust a driver's
// declared Capabilities: it checks that the driver declares an exclusion at
// all (once, up front; the lease checks are skipped otherwise); that every
// precondition the driver claims is refused by the service, with the
// stored object left exactly as it was; that versions from Put and Get
// agree, are never empty, and cannot be guessed from an earlier one by
// driver.FakeVersion; that a wildcard or a list is never taken for a
// version; that a missing bucket is not a missing key; that a key that is a
// prefix of another works or is refused clearly; for a Conditional driver,
// that 16 racing IfAbsent writers get exactly one winner and that 5 workers
// doing 10 compare-and-swap increments each end at exactly 50, and, given
// Options.URL, that conditional writes raced between 4 processes, each
// with a bucket of its own opened from the URL, get exactly one winner per
// key (the test that called Run runs again in each of them; see
// Options.URL); that a cancelled context surfaces as context.Canceled,
// also in the middle of a large body, and leaves no torn object; that a
// write whose first attempt landed is never reported as refused, and that
// a Put cancelled at any of its steps settles (nothing of it lands after
// it returned); through the
// lease package, that a lease works on the driver; for a driver that
// streams (driver.Streamer), that a streamed write's condition holds at
// its commit, alone and under 8 racing writers, that a body of unknown
// length over two parts round-trips byte for byte, and that a cancelled
// context or a refusing StreamOptions.MayStart stores nothing and leaves no
// upload pending; and for a driver that lists (driver.Lister), that List
// pages through more than 1,000 keys in lexical order, takes its prefix as
// a plain string, returns odd keys as written and sees a write just made;
// and for a driver that reports the service's time
// (driver.ReportServiceTime; optional, and skipped with a message where
// nothing is reported), that it does so for every Get and Put answer, a
// refusal and a missing key included, with a Date near this machine's
// clock and a Get's modification time that is the latest write's; and
// for a driver that declares metadata (driver.Capabilities.Metadata;
// skipped with a message otherwise), that a write's metadata
// (driver.WithMetadata) comes back exactly from Get, replaces the old
// version's, survives a streamed write of three parts, is never seen
// apart from its body by a concurrent reader, is left alone by a refused
// write, is listed where ListMetadata is declared, and is refused, with
// nothing written, where it breaks driver.Metadata.Validate.
// Given Options.Transport, a hook that opens the driver with its client's
// HTTP transport replaced, the suite also watches the wire under the
// driver's own client library: a write whose reply is lost after it landed
// is never reported as refused, and a lease acquire or renewal whose reply
// is lost is recognised as the lease's own; a reply without an ETag is an
// error, never an empty or made-up version; a wildcard or list version is
// never sent. A driver without those optional interfaces, or a run without
// the hook, has their checks reported not applicable (not run). The
// suite's order is one table (suite.go); each file holds the checks of one
// obligation.
//
// Failures are reported at the line of the author's test that called Run.
// Check names (Names) are API: they key Options.KnownDeviations and the
// probe's report, and a renamed check keeps its old name working there.
//
// Check runs the same checks outside a test and returns a Report, which is
// how the bucketlease probe command tells an operator whether a live service
// gives the exclusion its driver declares. Every check works on keys of its
// own under Options.Prefix plus a random run id, and removes them afterwards.
package drivertest
