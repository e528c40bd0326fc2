package drivertest_test

import (
	"context"
	"fmt"

	"github.com/mushroomdb/bucketlease/driver/mem"
	"github.com/mushroomdb/bucketlease/drivertest"
)

// Check runs the suite outside a test, as the probe command does against a
// live service, and reports what the service really gives.
func ExampleCheck() {
	rep := drivertest.Check(context.Background(), mem.New(), drivertest.Options{Prefix: "probe"})
	fmt.Println("conforming:", rep.OK())
	fmt.Println("exclusion:", rep.Observed.Exclusion)
	fmt.Println("conditional delete:", rep.Observed.ConditionalDelete)
	// Output:
	// conforming: true
	// exclusion: conditional
	// conditional delete: true
}
