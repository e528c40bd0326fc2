package azure_test

import (
	"errors"
	"io"
	"runtime"
	"testing"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/azure"
	"github.com/mushroomdb/bucketlease/internal/location"
	"github.com/mushroomdb/bucketlease/internal/testsupport/leakcheck"
)

// TestOpenWithoutClose: an azblob:// bucket needs no Close. Its clients use
// the SDK's process-wide HTTP client, so 300 buckets opened and used, and
// never closed, leave the goroutine count where one bucket left it.
func TestOpenWithoutClose(t *testing.T) {
	cs := emulator(t)
	t.Setenv(azure.EnvConnectionString, cs)
	url := "azblob://" + newContainer(t, cs) + "/db1"
	use := func() {
		b, _, err := location.Open(t.Context(), url)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := b.(io.Closer); ok {
			t.Fatal("the azure Bucket has a Close method; its documentation says it needs none")
		}
		if _, _, err := b.Get(t.Context(), "db1/LEASE", driver.GetOptions{}); !errors.Is(err, driver.ErrNotExist) {
			t.Fatalf("Get of a missing key: %v", err)
		}
	}
	use()
	base := runtime.NumGoroutine()
	for range 300 {
		use()
	}
	// Connections end asynchronously; wait, within a bound, for the count
	// to settle (it only limits how long a failing test takes).
	const slack = 5
	if n := leakcheck.Settle(base + slack); n > base+slack {
		t.Errorf("after 300 buckets opened and not closed: %d goroutines, %d after the first", n, base)
	}
}
