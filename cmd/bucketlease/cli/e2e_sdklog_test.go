//go:build unix

package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	s3sdk "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/logging"

	"github.com/mushroomdb/bucketlease/internal/testsupport/miniotest"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// sdkChecksumLog is what aws-sdk-go-v2 logs, at DEBUG, for every GET of an
// object that was written by a client that sent no checksum.
const sdkChecksumLog = "Response has no supported checksum"

// TestSDKChecksumLogSilenced: the S3 SDK's own log line for an object
// stored without a checksum ("Response has no supported checksum. Not
// validating response payload.") never reaches the CLI's stderr, in text
// or inside hold --json's stream. The lease object is written here by a
// client that sends no checksum (as another tool or an older SDK does);
// the control reads it with a default SDK client and a logger, which logs
// the line, so the object really is one that makes the SDK speak.
func TestSDKChecksumLogSilenced(t *testing.T) {
	srv := miniotest.Env(t)
	bucket := srv.NewBucket(t)
	env := minioEnv(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	var logged bytes.Buffer
	var mu sync.Mutex
	client := func(opts func(*s3sdk.Options)) *s3sdk.Client {
		return s3sdk.New(s3sdk.Options{Region: miniotest.Region, BaseEndpoint: aws.String(srv.URL()), UsePathStyle: true,
			Credentials: credentials.NewStaticCredentialsProvider(srv.AccessKey, srv.SecretKey, ""),
			Logger: logging.LoggerFunc(func(c logging.Classification, format string, v ...any) {
				mu.Lock()
				defer mu.Unlock()
				fmt.Fprintf(&logged, "%s %s\n", c, fmt.Sprintf(format, v...))
			})}, opts)
	}
	noChecksum := client(func(o *s3sdk.Options) { o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired })
	old := time.Now().Add(-time.Hour)
	// Released (ttl_s 0), so that hold takes it at once: MinIO stamps
	// the object now, and the lease judges its age on that clock too.
	rec := admin.Record{InstanceID: "old-tool", AcquiredAt: old, RenewedAt: old, TTLSeconds: 0}
	for _, prefix := range []string{"db1", "db2"} {
		if _, err := noChecksum.PutObject(ctx, &s3sdk.PutObjectInput{Bucket: &bucket, Key: aws.String(prefix + "/LEASE"), Body: bytes.NewReader(rec.Encode())}); err != nil {
			t.Fatal(err)
		}
	}

	// The control: a default client, reading it, logs the line.
	// (s3.New leaves response validation unset; the driver's
	// config.LoadDefaultConfig makes it "when supported", as here.)
	out, err := client(func(o *s3sdk.Options) { o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenSupported }).GetObject(ctx, &s3sdk.GetObjectInput{Bucket: &bucket, Key: aws.String("db1/LEASE")})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, out.Body)
	out.Body.Close()
	mu.Lock()
	control := logged.String()
	mu.Unlock()
	if !strings.Contains(control, sdkChecksumLog) {
		t.Fatalf("the control: a default SDK client reading an object stored without a checksum logged %q, not %q; the test proves nothing on this server", control, sdkChecksumLog)
	}

	for _, c := range []struct {
		name string
		args []string
	}{
		{"show", []string{"show", s3URL(srv.URL(), bucket, "db1")}},
		{"show --json", []string{"show", s3URL(srv.URL(), bucket, "db1"), "--json"}},
		{"list", []string{"list", s3URL(srv.URL(), bucket, "")}},
		{"hold --json", []string{"hold", s3URL(srv.URL(), bucket, "db1"), "--ttl", "15s", "--json", "--log-level", "debug", "--state-dir", "none", "--", "true"}},
		{"hold", []string{"hold", "minio://" + srv.Addr + "/" + bucket + "/db2?tls=false", "--ttl", "15s", "--state-dir", "none", "--", "true"}},
	} {
		stdout, stderr, code := runCLI(t, env, c.args...)
		noSecret(t, srv, stdout, stderr)
		if code != 0 {
			t.Errorf("%s: exit %d\n%s%s", c.name, code, stdout, stderr)
		}
		if strings.Contains(stderr, sdkChecksumLog) || strings.Contains(stdout, sdkChecksumLog) {
			t.Errorf("%s: the SDK's checksum log reached the output:\n%s%s", c.name, stdout, stderr)
		}
	}
}
