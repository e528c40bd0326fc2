package main

import (
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/internal/testsupport/wrapcheck"
)

// TestDeadlinesKeepAbilities: the bounded bucket of hold, put, show, break,
// list and probe has exactly the optional interfaces of the driver's, each
// reaching it: a Close of it closes the driver's client.
func TestDeadlinesKeepAbilities(t *testing.T) {
	loc := mustParse(t, "mem://wrapcheck/p")
	wrapcheck.Check(t, "deadlineBucket", func(_ *testing.T, in driver.Bucket) driver.Bucket {
		return withDeadlines(in, time.Minute, loc, "--timeout")
	})
}
