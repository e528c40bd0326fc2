// Package drivertest is the conformance suite for driver.Bucket
// implementations: what testing/fstest.TestFS is to an fs.FS.
//
// A driver author calls [Run] from a test of their own, against their own
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
// Each check proves one of the driver's obligations, listed with the
// checks that prove them in docs/drivers.md ("The obligations"). The suite
// does not trust a driver's declared Capabilities: it checks that every
// precondition the driver claims is refused by the service, with the
// stored object left exactly as it was, that racing writers get one
// winner (also between processes, given [Options].URL), that cancellation leaves no torn object, and that the lease
// works on the driver. Given [Options].Transport, a hook that opens the
// driver with its client's HTTP transport replaced, it also watches the
// wire under the driver's own client library. A run without the hook has
// those checks reported not applicable. The suite's order is
// one table (suite.go); each file holds the checks of one obligation.
//
// Failures are reported at the line of the author's test that called Run.
// Check names ([Names]) are API: they key Options.KnownDeviations and the
// probe's report, and a renamed check keeps its old name working there.
//
// [Check] runs the same checks outside a test and returns a [Report], which
// is how the bucketlease probe command tells an operator whether a live
// service gives the exclusion its driver declares. Every check works on
// keys of its own under Options.Prefix plus a random run id, and removes
// them afterwards.
package drivertest
