package s3_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/aws/smithy-go"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/s3"
	"github.com/mushroomdb/bucketlease/drivertest"
	"github.com/mushroomdb/bucketlease/internal/location"
	"github.com/mushroomdb/bucketlease/internal/testsupport/miniotest"
	"github.com/mushroomdb/bucketlease/internal/testsupport/testenv"
)

// TestConformanceMinIO runs the whole suite through the AWS SDK against the
// MinIO server started by scripts/test. MinIO ignores If-Match on
// DeleteObject, but the driver declares no conditional delete for a custom
// endpoint, so no check deviates.
func TestConformanceMinIO(t *testing.T) {
	srv := miniotest.Env(t)
	bucket := srv.NewBucket(t)
	b := s3.New(srv.Client(srv.URL()), bucket)
	// The child processes of exclusion-across-processes open the bucket
	// by URL, with the server's credentials from the environment.
	testenv.IsolateAWS(t)
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	opts := options(srv, bucket)
	opts.URL = "s3://" + bucket + "?region=" + miniotest.Region + "&path_style=true&endpoint=" + srv.URL()
	drivertest.Run(t, b, opts)
}

// TestOpenMinIO opens the driver by URL, with credentials from the
// environment as the SDK's default chain finds them.
func TestOpenMinIO(t *testing.T) {
	srv := miniotest.Env(t)
	bucket := srv.NewBucket(t)
	testenv.IsolateAWS(t)
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	ctx := t.Context()
	b, prefix, err := location.Open(ctx, "s3://"+bucket+"/backups/db1?region=us-east-1&path_style=true&endpoint="+srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	if prefix != "backups/db1" {
		t.Errorf("prefix = %q", prefix)
	}
	key := prefix + "/LEASE"
	put, err := b.Put(ctx, key, []byte("one"), driver.PutOptions{If: driver.IfAbsent()})
	v1 := put.Version
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(v1), `"`) {
		t.Errorf("version %s is not a quoted ETag as S3 returns it", v1)
	}
	_, err = b.Put(ctx, key, []byte("two"), driver.PutOptions{If: driver.IfAbsent()})
	if !errors.Is(err, driver.ErrPrecondition) {
		t.Fatalf("second IfAbsent: %v, want ErrPrecondition", err)
	}
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "PreconditionFailed" {
		t.Errorf("the SDK's error is not in the chain with code PreconditionFailed: %v", err)
	}
	if !strings.Contains(err.Error(), key) {
		t.Errorf("error %q does not name the key", err)
	}
	rc, got, err := b.Get(ctx, key, driver.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(rc)
	rc.Close()
	if string(data) != "one" || got.Version != v1 {
		t.Errorf("Get = %q, %s; want %q, %s", data, got.Version, "one", v1)
	}
}

func TestOpenURL(t *testing.T) {
	testenv.IsolateAWS(t)
	good := []string{
		"s3://bucket/a/b?region=eu-west-1",
		"s3://bucket?region=auto&endpoint=https://s3.example.com&path_style=true",
		"s3://bucket/p?region=us-east-1&path_style=false",
	}
	bad := map[string]string{
		"s3://bucket/p?regoin=eu-west-1":                     `unknown query parameter "regoin"`,
		"s3://bucket/p?region=eu-west-1&secret_key=hunter2":  `unknown query parameter "secret_key"`,
		"s3://bucket/p?region=eu-west-1&region=us-east-1":    "given 2 times",
		"s3://AKIAHUNTER2:hunter2@bucket/p?region=eu-west-1": "must not hold credentials",
		"s3:///p?region=eu-west-1":                           "names no bucket",
		"s3://bucket/p?region=x&path_style=maybe":            "path_style",
		"s3://bucket/p?region=x&endpoint=ftp://h":            "http:// or https://",
		"s3://bucket/p?region=x&endpoint=http://user@h:90":   "must not hold credentials",
		"s3://bucket/p": "no region",
		// The host is the bucket, and must be a bucket name.
		"s3://bucket:9000/p?region=x": "lower-case letters",
		"s3://[::1]/p?region=x":       "lower-case letters",
		"s3://Bucket_Bad/p?region=x":  "lower-case letters",
		"s3://192.168.0.1/p?region=x": "IP address",
		"s3://a/p?region=x":           "3 to 63",
		// A secret nested in the endpoint, encoded once or twice, is refused.
		"s3://bucket/p?region=x&endpoint=https%3A%2F%2Fh%2Fx%3FX-Amz-Signature%3Dsig-hunter2": "query",
		"s3://bucket/p?region=x&endpoint=https%253A%252F%252Fh%252Fx%253Fsig%253Dsig-hunter2": "http:// or https://",
	}
	drivertest.RunURLs(t, drivertest.URLCases{Valid: good, Invalid: bad, Secrets: []string{"hunter2", "AKIAHUNTER2", "sig-hunter2"}})
}

// TestRegionDefaultForAnEndpoint: an S3-compatible server at an endpoint
// of its own needs no region in the URL (us-east-1, what such servers take);
// AWS itself still does (TestURLs: "no region").
func TestRegionDefaultForAnEndpoint(t *testing.T) {
	testenv.IsolateAWS(t)
	if _, _, err := location.Open(context.Background(), "s3://bucket/p?endpoint=http://127.0.0.1:9000&path_style=true"); err != nil {
		t.Fatal(err)
	}
}

// TestRegionFromEnvironment shows that the region, like the credentials,
// may come from the SDK's chain instead of the URL.
func TestRegionFromEnvironment(t *testing.T) {
	testenv.IsolateAWS(t)
	t.Setenv("AWS_REGION", "eu-central-1")
	if _, _, err := location.Open(context.Background(), "s3://bucket/p"); err != nil {
		t.Fatal(err)
	}
}

func TestCapabilities(t *testing.T) {
	got := s3.New(nil, "b").Capabilities()
	if got != (driver.Capabilities{Exclusion: driver.Conditional, ConditionalDelete: true, Metadata: true}) {
		t.Errorf("Capabilities() = %+v", got)
	}
}

// TestEmptyVersionRefusedLocally: an empty If-Match header is no condition
// to most servers, so IfMatch("") must never reach the wire. A nil client
// would panic if it did.
func TestEmptyVersionRefusedLocally(t *testing.T) {
	b := s3.New(nil, "b")
	if _, err := b.Put(context.Background(), "k", nil, driver.PutOptions{If: driver.IfMatch("")}); !errors.Is(err, driver.ErrPrecondition) {
		t.Errorf("Put IfMatch(\"\"): %v, want ErrPrecondition", err)
	}
	if err := b.Delete(context.Background(), "k", driver.IfMatch("")); !errors.Is(err, driver.ErrPrecondition) {
		t.Errorf("Delete IfMatch(\"\"): %v, want ErrPrecondition", err)
	}
	if err := b.Delete(context.Background(), "k", driver.IfAbsent()); !errors.Is(err, driver.ErrUnsupported) {
		t.Errorf("Delete IfAbsent: %v, want ErrUnsupported", err)
	}
}

// TestCloud runs the suite against a real S3 bucket, named by
// BUCKETLEASE_TEST_S3_URL (for example
// s3://my-test-bucket/bucketlease-ci?region=eu-west-1), with credentials
// from the AWS SDK's default chain.
func TestCloud(t *testing.T) {
	env := testenv.Cloud(t, "AWS S3", "BUCKETLEASE_TEST_S3_URL")
	b, prefix, err := location.Open(t.Context(), env["BUCKETLEASE_TEST_S3_URL"])
	if err != nil {
		t.Fatal(err)
	}
	drivertest.Run(t, b, drivertest.Options{Prefix: prefix + "/drivertest", URL: env["BUCKETLEASE_TEST_S3_URL"]})
}
