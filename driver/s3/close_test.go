package s3_test

import (
	"testing"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/s3"
	"github.com/mushroomdb/bucketlease/internal/location"
	"github.com/mushroomdb/bucketlease/internal/testsupport/leakcheck"
	"github.com/mushroomdb/bucketlease/internal/testsupport/miniotest"
	"github.com/mushroomdb/bucketlease/internal/testsupport/testenv"
)

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
	leakcheck.OpenClose(t, "s3://"+bucket+"/p?region="+miniotest.Region+"&path_style=true&endpoint="+srv.URL(), "p/LEASE", 300)
}

// TestCloseLeavesCallersClient: a Bucket from New leaves the client its
// caller passed in usable, and Close twice is harmless.
func TestCloseLeavesCallersClient(t *testing.T) {
	srv := miniotest.Env(t)
	bucket := srv.NewBucket(t)
	c := srv.Client(srv.URL())
	b := s3.New(c, bucket)
	if err := location.Close(b); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s3.New(c, bucket).Put(t.Context(), "k", []byte("x"), driver.PutOptions{If: driver.IfAbsent()}); err != nil {
		t.Fatalf("the caller's client after the Bucket's Close: %v", err)
	}
}
