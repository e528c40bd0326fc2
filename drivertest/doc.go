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
// Each check proves one of the driver's obligations (docs/drivers.md, "The
// obligations"). The suite does not trust declared Capabilities: it checks
// that every claimed precondition is refused with the stored object left as
// it was, that racing writers get one winner, that cancellation leaves no
// torn object, and that the lease works. The order is one table (suite.go);
// each file holds the checks of one obligation.
//
// Failures are reported at the line of the test that called Run. Check
// names ([Names]) are API: they key Options.KnownDeviations and the probe's
// report. [Check] runs the same checks outside a test and returns a
// [Report], as the bucketlease probe command does. Every check works on
// keys of its own under Options.Prefix plus a random run id, and removes
// them afterwards.
package drivertest
