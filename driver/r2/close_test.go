package r2_test

import (
	"testing"

	"github.com/mushroomdb/bucketlease/internal/testsupport/leakcheck"
	"github.com/mushroomdb/bucketlease/internal/testsupport/miniotest"
	"github.com/mushroomdb/bucketlease/internal/testsupport/testenv"
)

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
	leakcheck.OpenClose(t, "r2://"+account+"/"+bucket+"/p?endpoint="+srv.URL(), "p/LEASE", 300)
}
