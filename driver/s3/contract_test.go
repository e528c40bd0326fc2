package s3_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	s3sdk "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/s3"
	"github.com/mushroomdb/bucketlease/drivertest"
	"github.com/mushroomdb/bucketlease/drivertest/wirefault"
	"github.com/mushroomdb/bucketlease/internal/location"
	"github.com/mushroomdb/bucketlease/internal/objects"
	"github.com/mushroomdb/bucketlease/internal/testsupport/miniotest"
	"github.com/mushroomdb/bucketlease/internal/testsupport/testenv"
)

// options returns the MinIO conformance options: a bucket that does not
// exist, wrong credentials, and the Transport hook for the wire checks.
func options(srv miniotest.Server, bucket string) drivertest.Options {
	wrong := srv.Client(srv.URL()).Options()
	wrong.Credentials = credentials.NewStaticCredentialsProvider("wrong-access-key", "wrong-secret-key", "")
	return drivertest.Options{
		MissingBucket:    s3.New(srv.Client(srv.URL()), "bltest-no-such-bucket"),
		WrongCredentials: s3.New(s3sdk.New(wrong), bucket),
		Transport: func(rt http.RoundTripper) (driver.Bucket, error) {
			o := srv.Client(srv.URL()).Options()
			o.HTTPClient = &http.Client{Transport: rt}
			return s3.New(s3sdk.New(o), bucket), nil
		},
	}
}

// TestConditionalDeleteOnlyForAWS: a client with a custom
// endpoint may reach a service that ignores If-Match on DeleteObject
// (MinIO does), so the driver declares a conditional delete for AWS only,
// and refuses a conditional Delete elsewhere without sending it.
func TestConditionalDeleteOnlyForAWS(t *testing.T) {
	testenv.IsolateAWS(t)
	for endpoint, want := range map[string]bool{
		"":                                       true,
		"https://s3.eu-west-1.amazonaws.com":     true,
		"https://s3.cn-north-1.amazonaws.com.cn": true,
		"http://127.0.0.1:9000":                  false,
		"https://minio.example.com":              false,
		"https://s3.amazonaws.com.evil.example":  false,
		"http://s3.eu-west-1.amazonaws.com":      false,
	} {
		o := s3sdk.Options{Region: "eu-west-1"}
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
		if got := s3.New(s3sdk.New(o), "bkt").Capabilities().ConditionalDelete; got != want {
			t.Errorf("endpoint %q: ConditionalDelete %v, want %v", endpoint, got, want)
		}
	}
	b, _, err := location.Open(context.Background(), "s3://bkt/p?region=us-east-1&endpoint=http://127.0.0.1:9")
	if err != nil {
		t.Fatal(err)
	}
	if b.Capabilities().ConditionalDelete {
		t.Error("an s3:// URL with an endpoint declares a conditional delete")
	}
	if err := b.Delete(context.Background(), "p/LEASE", driver.IfMatch(`"abc"`)); !errors.Is(err, driver.ErrUnsupported) {
		t.Errorf("Delete IfMatch through a custom endpoint: %v, want ErrUnsupported", err)
	}
}

// TestMinIOConditionalDeleteIgnored is the evidence behind the above: the
// MinIO server deletes on a DeleteObject whose If-Match names a version the
// object never had.
func TestMinIOConditionalDeleteIgnored(t *testing.T) {
	srv := miniotest.Env(t)
	bucket := srv.NewBucket(t)
	c := srv.Client(srv.URL())
	ctx := t.Context()
	if _, err := c.PutObject(ctx, &s3sdk.PutObjectInput{Bucket: &bucket, Key: aws.String("k"), Body: strings.NewReader("x")}); err != nil {
		t.Fatal(err)
	}
	_, err := c.DeleteObject(ctx, &s3sdk.DeleteObjectInput{Bucket: &bucket, Key: aws.String("k"), IfMatch: aws.String(`"00000000000000000000000000000000"`)})
	_, gerr := c.HeadObject(ctx, &s3sdk.HeadObjectInput{Bucket: &bucket, Key: aws.String("k")})
	if err == nil && gerr != nil {
		t.Logf("MinIO ignored If-Match on DeleteObject (the object is gone)")
		return
	}
	t.Logf("MinIO honoured If-Match on DeleteObject (delete: %v); the driver still does not rely on it", err)
}

// TestErrorClasses on the MinIO server: a missing
// bucket is ErrBucketNotExist on every operation, never ErrNotExist or
// ErrPrecondition; wrong credentials are ErrPermission; the SDK's error
// stays in the chain.
func TestErrorClasses(t *testing.T) {
	srv := miniotest.Env(t)
	ctx := t.Context()
	missing := s3.New(srv.Client(srv.URL()), "bltest-no-such-bucket")
	_, _, err := missing.Get(ctx, "db1/LEASE", driver.GetOptions{})
	if !errors.Is(err, driver.ErrBucketNotExist) || errors.Is(err, driver.ErrNotExist) || !strings.Contains(err.Error(), "NoSuchBucket") {
		t.Errorf("Get in a missing bucket: %v, want ErrBucketNotExist", err)
	}
	_, err = missing.Put(ctx, "db1/LEASE", []byte("x"), driver.PutOptions{If: driver.IfMatch(`"0123456789abcdef0123456789abcdef"`)})
	if !errors.Is(err, driver.ErrBucketNotExist) || errors.Is(err, driver.ErrPrecondition) {
		t.Errorf("Put IfMatch in a missing bucket: %v, want ErrBucketNotExist", err)
	}
	if err := missing.Delete(ctx, "db1/LEASE", driver.Condition{}); !errors.Is(err, driver.ErrBucketNotExist) {
		t.Errorf("Delete in a missing bucket: %v, want ErrBucketNotExist", err)
	}

	bucket := srv.NewBucket(t)
	o := srv.Client(srv.URL()).Options()
	o.Credentials = credentials.NewStaticCredentialsProvider("wrong-access-key", "wrong-secret-key", "")
	wrong := s3.New(s3sdk.New(o), bucket)
	_, _, err = wrong.Get(ctx, "k", driver.GetOptions{})
	if !errors.Is(err, driver.ErrPermission) || errors.Is(err, driver.ErrNotExist) {
		t.Errorf("Get with wrong credentials: %v, want ErrPermission", err)
	}
	if _, err := wrong.Put(ctx, "k", []byte("x"), driver.PutOptions{If: driver.IfAbsent()}); !errors.Is(err, driver.ErrPermission) {
		t.Errorf("Put with wrong credentials: %v, want ErrPermission", err)
	}
	if err := wrong.Delete(ctx, "k", driver.Condition{}); !errors.Is(err, driver.ErrPermission) {
		t.Errorf("Delete with wrong credentials: %v, want ErrPermission", err)
	}
	o.Credentials = aws.AnonymousCredentials{}
	if _, _, err := s3.New(s3sdk.New(o), bucket).Get(ctx, "k", driver.GetOptions{}); !errors.Is(err, driver.ErrPermission) {
		t.Errorf("Get without credentials: %v, want ErrPermission", err)
	}
}

// TestAliasingKeysRefused: MinIO stores "/lead/k" as "lead/k", so two
// different keys would name one object; the driver refuses keys outside
// driver.CheckKey's rule.
func TestAliasingKeysRefused(t *testing.T) {
	srv := miniotest.Env(t)
	bucket := srv.NewBucket(t)
	c := srv.Client(srv.URL())
	ctx := t.Context()
	if _, err := c.PutObject(ctx, &s3sdk.PutObjectInput{Bucket: &bucket, Key: aws.String("/lead/k"), Body: strings.NewReader("x")}); err == nil {
		if _, err := c.HeadObject(ctx, &s3sdk.HeadObjectInput{Bucket: &bucket, Key: aws.String("lead/k")}); err == nil {
			t.Logf("MinIO stored /lead/k as lead/k")
		}
	}
	b := s3.New(c, bucket)
	for _, k := range []string{"/lead/k", "a//b", "a/./b", "a/../b", `a\b`, "a/", ""} {
		if _, err := b.Put(ctx, k, []byte("x"), driver.PutOptions{If: driver.IfAbsent()}); !errors.Is(err, driver.ErrInvalidKey) {
			t.Errorf("Put %q: %v, want ErrInvalidKey", k, err)
		}
		if _, _, err := b.Get(ctx, k, driver.GetOptions{}); !errors.Is(err, driver.ErrInvalidKey) {
			t.Errorf("Get %q: %v, want ErrInvalidKey", k, err)
		}
	}
}

// TestRetriedWriteThatLanded: the SDK retries a conditional
// PutObject whose reply was lost; the retry is refused because the first
// attempt landed. That is never ErrPrecondition: the driver reads the
// object back, finds the write's bytes, and reports success with the
// object's version, not ErrOutcomeUnknown.
func TestRetriedWriteThatLanded(t *testing.T) {
	srv := miniotest.Env(t)
	bucket := srv.NewBucket(t)
	tr := &wirefault.Transport{}
	o := srv.Client(srv.URL()).Options()
	o.HTTPClient = &http.Client{Transport: tr}
	o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
		so.MaxAttempts = 3
		so.MaxBackoff = 10 * time.Millisecond
	})
	b := s3.New(s3sdk.New(o), bucket)
	ctx := t.Context()
	put, err := b.Put(ctx, "k", []byte("one"), driver.PutOptions{If: driver.IfAbsent()})
	v := put.Version
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		key  string
		cond driver.Condition
		hdr  string
	}{{"k", driver.IfMatch(v), "If-Match"}, {"new", driver.IfAbsent(), "If-None-Match"}} {
		tr.Drop = wirefault.Once(wirefault.ConditionalPut(c.hdr, "/"+c.key))
		put, err := b.Put(ctx, c.key, []byte("two"), driver.PutOptions{If: c.cond})
		got := put.Version
		if err != nil {
			t.Errorf("Put (%s) whose first attempt landed: %v; want success, settled by reading back", c.cond, err)
			continue
		}
		if data, ga, err := objects.ReadAll(ctx, b, c.key, 100, driver.GetOptions{}); err != nil || string(data) != "two" || ga.Version != got {
			t.Errorf("after Put (%s): the object is %q at %s (%v), want %q at the version Put returned, %s", c.cond, data, ga.Version, err, "two", got)
		}
	}
	if tr.Dropped() != 2 {
		t.Fatalf("%d replies dropped; the scenario did not happen", tr.Dropped())
	}
}

// TestNoCredentials: a client built from the URL that finds no
// credentials in the chain (the instance metadata service disabled, so the
// test stays on loopback) fails its requests with ErrPermission.
func TestNoCredentials(t *testing.T) {
	srv := miniotest.Env(t)
	bucket := srv.NewBucket(t)
	testenv.IsolateAWS(t)
	b, _, err := location.Open(t.Context(), "s3://"+bucket+"/p?region=us-east-1&path_style=true&endpoint="+srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Get(t.Context(), "p/LEASE", driver.GetOptions{}); !errors.Is(err, driver.ErrPermission) {
		t.Fatalf("Get without credentials: %v, want ErrPermission", err)
	}
}
