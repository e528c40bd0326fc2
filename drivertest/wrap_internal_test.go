package drivertest

import (
	"testing"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/internal/testsupport/wrapcheck"
)

// TestRecorderKeepsAbilities: the checks see the driver through the
// recorder, with exactly the driver's optional interfaces, so that a check
// of an ability the driver lacks is not applicable rather than run on a
// fallback.
func TestRecorderKeepsAbilities(t *testing.T) {
	wrapcheck.Check(t, "recorder", func(_ *testing.T, in driver.Bucket) driver.Bucket {
		b, _ := recorded(in)
		return b
	})
}
