// Package leakcheck checks that a driver's buckets, opened by URL and
// closed, leave no goroutine behind: the test every network driver runs
// against its server or emulator (TestCloseLeaksNothing).
package leakcheck

import (
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/internal/location"
)

// slack is how many goroutines more than the baseline are not a leak: the
// runtime's and the test framework's own come and go.
const slack = 5

// kept is how many buckets the negative control leaves open.
const kept = 50

// OpenClose opens the bucket at url with bucket.Open, as a user would,
// reads the missing key through it (so that its client holds a kept-alive
// connection to the server) and closes it, rounds times; it fails t if the
// goroutines then outnumber those before by more than a few. Then the
// negative control, which shows that the check can see a leak: kept
// buckets opened and used but not closed must keep at least kept more
// goroutines (each client's idle connection), and closing them must
// release them.
func OpenClose(t *testing.T, url, missing string, rounds int) {
	t.Helper()
	// One round first, so that whatever is started once per process (the
	// client library's and the transport's) is in the baseline.
	if err := location.Close(openAndUse(t, url, missing)); err != nil {
		t.Fatal(err)
	}
	base := Steady()
	for range rounds {
		if err := location.Close(openAndUse(t, url, missing)); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	if n := Settle(base + slack); n > base+slack {
		t.Fatalf("after %d opens and closes: %d goroutines, %d before", rounds, n, base)
	}

	open := make([]driver.Bucket, kept)
	for i := range open {
		open[i] = openAndUse(t, url, missing)
	}
	if n := runtime.NumGoroutine(); n < base+kept {
		t.Errorf("negative control: %d buckets opened and not closed, %d goroutines, %d before; want at least %d more",
			kept, n, base, kept)
	}
	for _, b := range open {
		if err := location.Close(b); err != nil {
			t.Fatal(err)
		}
	}
	if n := Settle(base + slack); n > base+slack {
		t.Errorf("after closing the negative control's buckets: %d goroutines, %d before", n, base)
	}
}

// openAndUse opens the bucket at url and reads the missing key.
func openAndUse(t *testing.T, url, missing string) driver.Bucket {
	t.Helper()
	b, _, err := location.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Get(t.Context(), missing, driver.GetOptions{}); !errors.Is(err, driver.ErrNotExist) {
		t.Fatalf("Get of the missing key %s: %v", missing, err)
	}
	return b
}

// Settle waits, up to a bound, for the number of goroutines to come down to
// at most want, and returns the last count. Connections closed by Close
// end their goroutines asynchronously, so the count is polled; the bound
// only limits how long a failing test takes.
func Settle(want int) int {
	n := runtime.NumGoroutine()
	for deadline := time.Now().Add(20 * time.Second); n > want && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		n = runtime.NumGoroutine()
	}
	return n
}

// Steady returns the number of goroutines once it has stayed the same for
// a few polls (within a bound): the baseline, with the goroutines of
// connections closed just before gone.
func Steady() int {
	n, same := runtime.NumGoroutine(), 0
	for deadline := time.Now().Add(5 * time.Second); same < 5 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		if m := runtime.NumGoroutine(); m == n {
			same++
		} else {
			n, same = m, 0
		}
	}
	return n
}
