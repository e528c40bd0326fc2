package minio_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	miniogo "github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/minio"
	"github.com/mushroomdb/bucketlease/driver/s3"
	"github.com/mushroomdb/bucketlease/drivertest"
	"github.com/mushroomdb/bucketlease/internal/location"
	"github.com/mushroomdb/bucketlease/internal/testsupport/miniotest"
	"github.com/mushroomdb/bucketlease/internal/testsupport/testenv"
)

// isolateCreds clears every variable the credential chain reads.
func isolateCreds(t *testing.T) {
	for _, v := range []string{"MINIO_ROOT_USER", "MINIO_ROOT_PASSWORD", "MINIO_ACCESS_KEY", "MINIO_SECRET_KEY",
		"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"} {
		t.Setenv(v, "")
	}
}

// open opens the bucket by URL with credentials in the environment.
func open(t *testing.T, srv miniotest.Server, bucket, path string) (driver.Bucket, string) {
	t.Helper()
	isolateCreds(t)
	t.Setenv("MINIO_ACCESS_KEY", srv.AccessKey)
	t.Setenv("MINIO_SECRET_KEY", srv.SecretKey)
	b, prefix, err := location.Open(t.Context(), "minio://"+srv.Addr+"/"+bucket+"/"+path+"?tls=false")
	if err != nil {
		t.Fatal(err)
	}
	return b, prefix
}

// TestConformanceMinIO runs the whole suite through minio-go against the
// MinIO server started by scripts/test, opened by URL.
func TestConformanceMinIO(t *testing.T) {
	srv := miniotest.Env(t)
	bucket := srv.NewBucket(t)
	b, prefix := open(t, srv, bucket, "ci/run")
	if prefix != "ci/run" {
		t.Errorf("prefix = %q", prefix)
	}
	drivertest.Run(t, b, drivertest.Options{Prefix: prefix, URL: "minio://" + srv.Addr + "/" + bucket + "/ci/run?tls=false"})
}

// TestBringYourOwnClient uses New with a client the caller built.
func TestBringYourOwnClient(t *testing.T) {
	srv := miniotest.Env(t)
	c, err := miniogo.New(srv.Addr, &miniogo.Options{Creds: credentials.NewStaticV4(srv.AccessKey, srv.SecretKey, "")})
	if err != nil {
		t.Fatal(err)
	}
	b := minio.New(c, srv.NewBucket(t))
	put, err := b.Put(t.Context(), "k", []byte("x"), driver.PutOptions{If: driver.IfAbsent()})
	v := put.Version
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(v), `"`) {
		t.Errorf("version %s is quoted; minio-go reports ETags unquoted", v)
	}
	_, err = b.Put(t.Context(), "k", []byte("y"), driver.PutOptions{If: driver.IfAbsent()})
	if !errors.Is(err, driver.ErrPrecondition) {
		t.Fatalf("second IfAbsent: %v, want ErrPrecondition", err)
	}
	var er miniogo.ErrorResponse
	if !errors.As(err, &er) || er.Code != "PreconditionFailed" || er.StatusCode != 412 {
		t.Errorf("minio-go's ErrorResponse is not in the chain as 412 PreconditionFailed: %v", err)
	}
	if !strings.Contains(err.Error(), "minio: put k (If-None-Match: *)") {
		t.Errorf("error %q does not name the driver, key and condition", err)
	}
}

// TestQuotedVersionAccepted: a quoted ETag, as the s3 driver returns it for
// the same object, works in IfMatch here.
func TestQuotedVersionAccepted(t *testing.T) {
	srv := miniotest.Env(t)
	bucket := srv.NewBucket(t)
	viaS3 := s3.New(srv.Client(srv.URL()), bucket)
	put, err := viaS3.Put(t.Context(), "k", []byte("one"), driver.PutOptions{If: driver.IfAbsent()})
	v := put.Version
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(v), `"`) {
		t.Fatalf("the s3 driver's version %s is not quoted", v)
	}
	b, _ := open(t, srv, bucket, "")
	if _, err := b.Put(t.Context(), "k", []byte("two"), driver.PutOptions{If: driver.IfMatch(v)}); err != nil {
		t.Fatalf("Put IfMatch(%s): %v", v, err)
	}
}

// TestTLSByDefault: without tls=false the driver speaks TLS, which the
// plain-HTTP test server cannot answer.
func TestTLSByDefault(t *testing.T) {
	srv := miniotest.Env(t)
	bucket := srv.NewBucket(t)
	isolateCreds(t)
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	b, _, err := location.Open(t.Context(), "minio://"+srv.Addr+"/"+bucket+"/p")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := b.Put(ctx, "p/k", []byte("x"), driver.PutOptions{}); err == nil {
		t.Fatal("a TLS request to a plain-HTTP server succeeded")
	}
}

func TestConditionalDeleteNotSent(t *testing.T) {
	b := minio.New(nil, "bkt") // a request would panic on the nil client
	for _, c := range []driver.Condition{driver.IfMatch("abc"), driver.IfAbsent()} {
		if err := b.Delete(context.Background(), "k", c); !errors.Is(err, driver.ErrUnsupported) {
			t.Errorf("Delete %v: %v, want ErrUnsupported", c, err)
		}
	}
	if _, err := b.Put(context.Background(), "k", nil, driver.PutOptions{If: driver.IfMatch(`""`)}); !errors.Is(err, driver.ErrPrecondition) {
		t.Errorf("Put IfMatch of an empty ETag: %v, want ErrPrecondition", err)
	}
}

func TestOpenURL(t *testing.T) {
	isolateCreds(t)
	ctx := context.Background()
	if _, _, err := location.Open(ctx, "minio://127.0.0.1:9000/bkt/p?tls=false"); !errors.Is(err, driver.ErrPermission) || !strings.Contains(err.Error(), "MINIO_ACCESS_KEY") {
		t.Errorf("Open without credentials: %v, want an error naming the variables", err)
	}
	t.Setenv("MINIO_ACCESS_KEY", "minioadmin-test")
	t.Setenv("MINIO_SECRET_KEY", "hunter2hunter2")
	good := []string{
		"minio://127.0.0.1:9000/bkt/p?tls=false",
		"minio://minio.example.com/bkt",
		"minio://minio.example.com:443/bkt/a/b?tls=true&region=eu-1",
	}
	bad := map[string]string{
		"minio://h:9000/bkt/p?insecure=true":            `unknown query parameter "insecure"`,
		"minio://h:9000/bkt/p?secret_key=hunter2":       `unknown query parameter "secret_key"`,
		"minio://h:9000/bkt/p?tls=nope":                 "tls",
		"minio://ak:hunter2@h:9000/bkt/p":               "must not hold credentials",
		"minio://h:9000":                                "names no bucket",
		"minio://h:9000/":                               "names no bucket",
		"minio:///bkt/p":                                "names no server",
		"minio://h:9000/bkt/p?tls=false&tls=true":       "given 2 times",
		"minio://h:9000/bkt/p?tls=false&region=x&tls=1": "given 2 times",
		// The bucket (container) name must follow the service's naming rule.
		"minio://h:9000/Bucket_Bad/p": "lower-case letters",
		"minio://h:9000/b/p":          "3 to 63",
	}
	drivertest.RunURLs(t, drivertest.URLCases{Valid: good, Invalid: bad, Secrets: []string{"hunter2"}})
}

// TestGetBodyAndVersionAgree reads back what Put wrote.
func TestGetBodyAndVersionAgree(t *testing.T) {
	srv := miniotest.Env(t)
	b, _ := open(t, srv, srv.NewBucket(t), "")
	put, err := b.Put(t.Context(), "k", []byte("payload"), driver.PutOptions{If: driver.IfAbsent()})
	v := put.Version
	if err != nil {
		t.Fatal(err)
	}
	rc, ga, err := b.Get(t.Context(), "k", driver.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil || string(data) != "payload" || ga.Version != v {
		t.Errorf("Get = %q, %s, %v; want %q, %s", data, ga.Version, err, "payload", v)
	}
}

// TestCloud runs the suite against a real MinIO deployment named by
// BUCKETLEASE_TEST_MINIO_URL (minio://HOST:PORT/BUCKET/PREFIX), with
// credentials in MINIO_ACCESS_KEY and MINIO_SECRET_KEY.
func TestCloud(t *testing.T) {
	env := testenv.Cloud(t, "MinIO deployment", "BUCKETLEASE_TEST_MINIO_URL")
	b, prefix, err := location.Open(t.Context(), env["BUCKETLEASE_TEST_MINIO_URL"])
	if err != nil {
		t.Fatal(err)
	}
	drivertest.Run(t, b, drivertest.Options{Prefix: prefix + "/drivertest", URL: env["BUCKETLEASE_TEST_MINIO_URL"]})
}

// TestGetIsOneResponse: the body and version come from one response, so a
// write between Get and reading the body changes neither. (minio-go's
// Client.GetObject fails this: its Object sends a HEAD, then a GET with
// If-Match, and reading the body after a concurrent write gives 412.)
func TestGetIsOneResponse(t *testing.T) {
	srv := miniotest.Env(t)
	b, _ := open(t, srv, srv.NewBucket(t), "")
	ctx := t.Context()
	put, err := b.Put(ctx, "k", []byte("one"), driver.PutOptions{If: driver.IfAbsent()})
	v1 := put.Version
	if err != nil {
		t.Fatal(err)
	}
	rc, ga, err := b.Get(ctx, "k", driver.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if _, err := b.Put(ctx, "k", []byte("two"), driver.PutOptions{If: driver.IfMatch(v1)}); err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(rc)
	if err != nil || string(data) != "one" || ga.Version != v1 {
		t.Errorf("Get then a write then read: %q, %s, %v; want %q, %s", data, ga.Version, err, "one", v1)
	}
}

// A minio:// URL without tls=false to a server that speaks plain HTTP:
// the error says to add tls=false.
func TestTLSToPlainHTTPSaysTLSFalse(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "plain HTTP only", http.StatusBadRequest)
	}))
	defer srv.Close()
	isolateCreds(t)
	t.Setenv("MINIO_ACCESS_KEY", "test-access")
	t.Setenv("MINIO_SECRET_KEY", "test-secret-hunter2")
	host := strings.TrimPrefix(srv.URL, "http://")
	b, _, err := location.Open(t.Context(), "minio://"+host+"/bkt/p")
	if err != nil {
		t.Fatal(err)
	}
	defer location.Close(b)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, err = b.Put(ctx, "p/k", []byte("x"), driver.PutOptions{If: driver.IfAbsent()})
	if err == nil || !strings.Contains(err.Error(), "tls=false") {
		t.Fatalf("a TLS request to a plain-HTTP server: %v, want an error that says to add tls=false", err)
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Fatal("the error shows the secret key")
	}
}
