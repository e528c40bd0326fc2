package minio_test

import (
	"errors"
	"net/http"
	"testing"

	miniogo "github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/minio"
	"github.com/mushroomdb/bucketlease/drivertest"
	"github.com/mushroomdb/bucketlease/drivertest/wirefault"
	"github.com/mushroomdb/bucketlease/internal/testsupport/miniotest"
)

// client returns a minio-go client for addr with the given keys and
// transport (nil: the default).
func client(t *testing.T, addr, access, secret string, rt http.RoundTripper) *miniogo.Client {
	t.Helper()
	c, err := miniogo.New(addr, &miniogo.Options{Creds: credentials.NewStaticV4(access, secret, ""),
		Region: miniotest.Region, Transport: rt})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestConformanceWithFaults runs the suite with a missing bucket, wrong
// credentials and the Transport hook, so that missing-bucket,
// wrong-credentials and the wire checks run against the MinIO server
// through minio-go.
func TestConformanceWithFaults(t *testing.T) {
	srv := miniotest.Env(t)
	bucket := srv.NewBucket(t)
	b := minio.New(client(t, srv.Addr, srv.AccessKey, srv.SecretKey, nil), bucket)
	drivertest.Run(t, b, drivertest.Options{
		MissingBucket:    minio.New(client(t, srv.Addr, srv.AccessKey, srv.SecretKey, nil), "bltest-no-such-bucket"),
		WrongCredentials: minio.New(client(t, srv.Addr, "wrong-access-key", "wrong-secret-key", nil), bucket),
		Transport: func(rt http.RoundTripper) (driver.Bucket, error) {
			return minio.New(client(t, srv.Addr, srv.AccessKey, srv.SecretKey, rt), bucket), nil
		},
	})
}

// TestErrorClasses: a missing bucket is
// ErrBucketNotExist on every operation; wrong credentials are ErrPermission.
func TestErrorClasses(t *testing.T) {
	srv := miniotest.Env(t)
	ctx := t.Context()
	missing := minio.New(client(t, srv.Addr, srv.AccessKey, srv.SecretKey, nil), "bltest-no-such-bucket")
	if _, _, err := missing.Get(ctx, "db1/LEASE", driver.GetOptions{}); !errors.Is(err, driver.ErrBucketNotExist) || errors.Is(err, driver.ErrNotExist) {
		t.Errorf("Get in a missing bucket: %v, want ErrBucketNotExist", err)
	}
	if _, err := missing.Put(ctx, "db1/LEASE", []byte("x"), driver.PutOptions{If: driver.IfMatch("0123456789abcdef0123456789abcdef")}); !errors.Is(err, driver.ErrBucketNotExist) || errors.Is(err, driver.ErrPrecondition) {
		t.Errorf("Put IfMatch in a missing bucket: %v, want ErrBucketNotExist", err)
	}
	if err := missing.Delete(ctx, "db1/LEASE", driver.Condition{}); !errors.Is(err, driver.ErrBucketNotExist) {
		t.Errorf("Delete in a missing bucket: %v, want ErrBucketNotExist", err)
	}
	wrong := minio.New(client(t, srv.Addr, "wrong-access-key", "wrong-secret-key", nil), srv.NewBucket(t))
	var er miniogo.ErrorResponse
	if _, _, err := wrong.Get(ctx, "k", driver.GetOptions{}); !errors.Is(err, driver.ErrPermission) || !errors.As(err, &er) {
		t.Errorf("Get with wrong credentials: %v, want ErrPermission with minio-go's error", err)
	}
	if _, err := wrong.Put(ctx, "k", []byte("x"), driver.PutOptions{If: driver.IfAbsent()}); !errors.Is(err, driver.ErrPermission) {
		t.Errorf("Put with wrong credentials: %v, want ErrPermission", err)
	}
	if err := wrong.Delete(ctx, "k", driver.Condition{}); !errors.Is(err, driver.ErrPermission) {
		t.Errorf("Delete with wrong credentials: %v, want ErrPermission", err)
	}
}

// TestRetriedWriteThatLanded: minio-go retries a PUT whose
// reply was lost; the refused retry is ErrOutcomeUnknown.
func TestRetriedWriteThatLanded(t *testing.T) {
	srv := miniotest.Env(t)
	tr := &wirefault.Transport{}
	b := minio.New(client(t, srv.Addr, srv.AccessKey, srv.SecretKey, tr), srv.NewBucket(t))
	ctx := t.Context()
	put, err := b.Put(ctx, "k", []byte("one"), driver.PutOptions{If: driver.IfAbsent()})
	v := put.Version
	if err != nil {
		t.Fatal(err)
	}
	tr.Drop = wirefault.Once(wirefault.ConditionalPut("If-Match", "/k"))
	_, err = b.Put(ctx, "k", []byte("two"), driver.PutOptions{If: driver.IfMatch(v)})
	if tr.Dropped() != 1 {
		t.Fatal("no reply was dropped")
	}
	if errors.Is(err, driver.ErrPrecondition) {
		t.Fatalf("Put whose first attempt landed: %v; ErrPrecondition says the object was left as it was", err)
	}
	if err != nil && !errors.Is(err, driver.ErrOutcomeUnknown) {
		t.Logf("minio-go did not retry: %v", err)
	}
}
