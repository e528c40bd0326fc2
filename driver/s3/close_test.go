package s3_test

import (
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/s3"
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

// TestCloseLeaksNothing: opening an s3:// bucket (against the MinIO
// server), using it and closing it 300 times leaves no goroutine behind.
// The negative control shows that the test can see a leak: 50 buckets
// opened and used but not closed keep at least 50 more goroutines (each
// client's idle connection), which closing them releases.
func TestCloseLeaksNothing(t *testing.T) {
	srv := miniotest.Env(t)
	bucket := srv.NewBucket(t)
	testenv.IsolateAWS(t)
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	url := "s3://" + bucket + "/p?region=" + miniotest.Region + "&path_style=true&endpoint=" + srv.URL()
	// One round first, so that whatever is started once per process is in
	// the baseline.
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

	// Negative control: without Close, each bucket keeps its client's
	// connection and its goroutines.
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

// TestCloseLeavesCallersClient: a Bucket from New leaves the client its
// caller passed in usable, and Close twice is harmless.
func TestCloseLeavesCallersClient(t *testing.T) {
	srv := miniotest.Env(t)
	bucket := srv.NewBucket(t)
	c := srv.Client(srv.URL())
	b := s3.New(c, bucket)
	if err := driver.Close(b); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s3.New(c, bucket).Put(t.Context(), "k", []byte("x"), driver.IfAbsent()); err != nil {
		t.Fatalf("the caller's client after the Bucket's Close: %v", err)
	}
}
