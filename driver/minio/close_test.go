package minio_test

import (
	"testing"

	"github.com/mushroomdb/bucketlease/internal/testsupport/leakcheck"
	"github.com/mushroomdb/bucketlease/internal/testsupport/miniotest"
)

// TestCloseLeaksNothing: opening a minio:// bucket, using it and closing it
// 300 times leaves no goroutine behind; the negative control (50 buckets
// opened and used but not closed) shows that the test sees a leak.
func TestCloseLeaksNothing(t *testing.T) {
	srv := miniotest.Env(t)
	bucket := srv.NewBucket(t)
	isolateCreds(t)
	t.Setenv("MINIO_ACCESS_KEY", srv.AccessKey)
	t.Setenv("MINIO_SECRET_KEY", srv.SecretKey)
	leakcheck.OpenClose(t, "minio://"+srv.Addr+"/"+bucket+"/p?tls=false", "p/LEASE", 300)
}
