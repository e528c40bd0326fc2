package r2_test

import (
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/internal/testsupport/miniotest"
	"github.com/mushroomdb/bucketlease/internal/testsupport/testenv"
)

// settle waits, up to a bound, for the number of goroutines to come down to
// at most want, and returns the last count. Connections closed by Close
// end their goroutines asynchronously, so the count is polled; the bound
// only limits how long a failing test takes.
func settle(want int) int {
	n := runtime.NumGoroutine()
	for deadline := time.Now().Add(20 * time.Second); n > want && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		n = runtime.NumGoroutine()
	}
	return n
}

// steady returns the number of goroutines once it has stayed the same for
// a few polls (within a bound): the baseline.
func steady() int {
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

// openAndUse opens the bucket by URL, as a user would, and reads a missing
// key, so that the client holds a kept-alive connection to the server.
func openAndUse(t *testing.T, url string) driver.Bucket {
	t.Helper()
	b, _, err := driver.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Get(t.Context(), "p/LEASE"); !errors.Is(err, driver.ErrNotExist) {
		t.Fatalf("Get of a missing key: %v", err)
	}
	return b
}

// TestCloseLeaksNothing: opening an r2:// bucket (the R2 profile against
// the MinIO server), using it and closing it 300 times leaves no goroutine
// behind; the negative control (50 buckets opened and used but not closed)
// shows that the test sees a leak.
func TestCloseLeaksNothing(t *testing.T) {
	srv := miniotest.Env(t)
	bucket := srv.NewBucket(t)
	testenv.IsolateAWS(t)
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	leakCheck(t, "r2://"+account+"/"+bucket+"/p?endpoint="+srv.URL())
}

// leakCheck opens, uses and closes the bucket at url 300 times and fails
// if goroutines grow; then, as a negative control, opens 50 without closing
// them and fails unless goroutines grow by at least 50.
func leakCheck(t *testing.T, url string) {
	t.Helper()
	if err := driver.Close(openAndUse(t, url)); err != nil {
		t.Fatal(err)
	}
	base := steady()
	for range 300 {
		if err := driver.Close(openAndUse(t, url)); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	const slack = 5
	if n := settle(base + slack); n > base+slack {
		t.Fatalf("after 300 opens and closes: %d goroutines, %d before", n, base)
	}
	const kept = 50
	open := make([]driver.Bucket, kept)
	for i := range open {
		open[i] = openAndUse(t, url)
	}
	if n := runtime.NumGoroutine(); n < base+kept {
		t.Errorf("negative control: %d buckets opened and not closed, %d goroutines, %d before; want at least %d more",
			kept, n, base, kept)
	}
	for _, b := range open {
		if err := driver.Close(b); err != nil {
			t.Fatal(err)
		}
	}
	if n := settle(base + slack); n > base+slack {
		t.Errorf("after closing the negative control's buckets: %d goroutines, %d before", n, base)
	}
}
