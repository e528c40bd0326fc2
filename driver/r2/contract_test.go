package r2_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/credentials"
	s3sdk "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/r2"
	"github.com/mushroomdb/bucketlease/drivertest"
	"github.com/mushroomdb/bucketlease/internal/location"
	"github.com/mushroomdb/bucketlease/internal/testsupport/miniotest"
	"github.com/mushroomdb/bucketlease/internal/testsupport/testenv"
)

// TestErrorClasses, through the R2 profile against the
// MinIO server: a missing bucket is ErrBucketNotExist, never ErrNotExist;
// wrong credentials are ErrPermission.
func TestErrorClasses(t *testing.T) {
	srv := miniotest.Env(t)
	bucket := srv.NewBucket(t)
	testenv.IsolateAWS(t)
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	ctx := t.Context()
	missing, _, err := location.Open(ctx, "r2://"+account+"/bltest-no-such-bucket/p?endpoint="+srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := missing.Get(ctx, "p/LEASE", driver.GetOptions{}); !errors.Is(err, driver.ErrBucketNotExist) || errors.Is(err, driver.ErrNotExist) {
		t.Errorf("Get in a missing bucket: %v, want ErrBucketNotExist", err)
	}
	b, _, err := location.Open(ctx, "r2://"+account+"/"+bucket+"/p?endpoint="+srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	wrongOpts := srv.Client(srv.URL()).Options()
	wrongOpts.Credentials = credentials.NewStaticCredentialsProvider(srv.AccessKey, "wrong-secret-key", "")
	drivertest.Run(t, b, drivertest.Options{Prefix: "p", MissingBucket: missing, WrongCredentials: r2.New(s3sdk.New(wrongOpts), bucket),
		Transport: func(rt http.RoundTripper) (driver.Bucket, error) {
			o := srv.Client(srv.URL()).Options()
			o.HTTPClient = &http.Client{Transport: rt}
			return r2.New(s3sdk.New(o), bucket), nil
		}})

	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong-secret-key")
	wrong, _, err := location.Open(ctx, "r2://"+account+"/"+bucket+"/p?endpoint="+srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := wrong.Get(ctx, "p/LEASE", driver.GetOptions{}); !errors.Is(err, driver.ErrPermission) {
		t.Errorf("Get with wrong credentials: %v, want ErrPermission", err)
	}
	if _, err := wrong.Put(ctx, "p/LEASE", []byte("x"), driver.PutOptions{If: driver.IfAbsent()}); !errors.Is(err, driver.ErrPermission) {
		t.Errorf("Put with wrong credentials: %v, want ErrPermission", err)
	}
}
