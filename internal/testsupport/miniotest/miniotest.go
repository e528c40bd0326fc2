// Package miniotest gives tests the MinIO server that scripts/test starts
// (scripts/emulators/minio.sh): its address and root credentials, an S3
// client for it, and fresh buckets that are removed when the test ends.
package miniotest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	s3sdk "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mushroomdb/bucketlease/internal/testsupport/testenv"
)

// The variables scripts/emulators/minio.sh exports.
const (
	EndpointVar  = "BUCKETLEASE_TEST_MINIO_ENDPOINT"
	AccessKeyVar = "BUCKETLEASE_TEST_MINIO_ACCESS_KEY"
	SecretKeyVar = "BUCKETLEASE_TEST_MINIO_SECRET_KEY"
)

// Region is the region MinIO answers to by default.
const Region = "us-east-1"

// Server is a running MinIO server.
type Server struct {
	Addr      string // host:port, plain HTTP on loopback
	AccessKey string
	SecretKey string
}

// URL returns the server's base URL, "http://host:port".
func (s Server) URL() string { return "http://" + s.Addr }

// Env returns the server scripts/test started. The test fails if the
// emulators are required and the server is missing, and is skipped
// otherwise (see testenv.Emulator).
func Env(t testing.TB) Server {
	t.Helper()
	v := testenv.Emulator(t, "MinIO", EndpointVar, AccessKeyVar, SecretKeyVar)
	return Server{Addr: v[EndpointVar], AccessKey: v[AccessKeyVar], SecretKey: v[SecretKeyVar]}
}

// Client returns an S3 client for the server at endpoint (a base URL, which
// may be a proxy in front of the server) with the server's credentials and
// path-style addressing.
func (s Server) Client(endpoint string) *s3sdk.Client {
	return s3sdk.New(s3sdk.Options{
		Region:       Region,
		BaseEndpoint: aws.String(endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""),
	})
}

// NewBucket creates a bucket with a fresh name and returns the name. The
// bucket and everything in it are removed when the test ends.
func (s Server) NewBucket(t testing.TB) string {
	t.Helper()
	var b [6]byte
	rand.Read(b[:])
	name := "bltest-" + hex.EncodeToString(b[:])
	c := s.Client(s.URL())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.CreateBucket(ctx, &s3sdk.CreateBucketInput{Bucket: &name}); err != nil {
		t.Fatalf("creating bucket %s on MinIO at %s: %v", name, s.Addr, err)
	}
	t.Cleanup(func() { s.removeBucket(t, c, name) })
	return name
}

func (s Server) removeBucket(t testing.TB, c *s3sdk.Client, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p := s3sdk.NewListObjectsV2Paginator(c, &s3sdk.ListObjectsV2Input{Bucket: &name})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Logf("cleanup: listing bucket %s: %v", name, err)
			return
		}
		for _, o := range page.Contents {
			if _, err := c.DeleteObject(ctx, &s3sdk.DeleteObjectInput{Bucket: &name, Key: o.Key}); err != nil {
				t.Logf("cleanup: deleting %s/%s: %v", name, aws.ToString(o.Key), err)
			}
		}
	}
	if _, err := c.DeleteBucket(ctx, &s3sdk.DeleteBucketInput{Bucket: &name}); err != nil {
		t.Logf("cleanup: deleting bucket %s: %v", name, err)
	}
}
