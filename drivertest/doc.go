// Package drivertest is the conformance suite for driver.Bucket
// implementations: what testing/fstest.TestFS is to an fs.FS.
//
// A driver author calls Run from a test of their own, against their own
// service or emulator:
//
//	func TestConformance(t *testing.T) {
//		b := openMyBucket(t)
//		drivertest.Run(t, b, drivertest.Options{Prefix: "ci"})
//	}
//
// The suite does not trust a driver's declared Capabilities: it checks that
// every precondition the driver claims is refused by the service, with the
// stored object left exactly as it was; that versions from Put and Get agree;
// for a Conditional driver, that 16 racing IfAbsent writers get exactly one
// winner and that 5 workers doing 10 compare-and-swap increments each end at
// exactly 50; that a cancelled context surfaces as context.Canceled; and,
// through the lease package, that a lease works on the driver.
//
// Check runs the same checks outside a test and returns a Report, which is
// how the bucketlease probe command tells an operator whether a live service
// gives the exclusion its driver declares. Every check works on keys of its
// own under Options.Prefix plus a random run id, and removes them afterwards.
package drivertest
