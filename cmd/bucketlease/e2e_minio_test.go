//go:build unix

package main

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/mushroomdb/bucketlease/internal/miniotest"
	"github.com/mushroomdb/bucketlease/internal/stripproxy"
)

// minioEnv is the environment the command needs for the test MinIO server:
// its credentials for the minio and the s3 drivers, and nothing from the
// developer's own AWS configuration.
func minioEnv(t *testing.T, srv miniotest.Server) []string {
	dir := t.TempDir()
	return []string{
		"MINIO_ACCESS_KEY=" + srv.AccessKey, "MINIO_SECRET_KEY=" + srv.SecretKey,
		"MINIO_ROOT_USER=", "MINIO_ROOT_PASSWORD=",
		"AWS_ACCESS_KEY_ID=" + srv.AccessKey, "AWS_SECRET_ACCESS_KEY=" + srv.SecretKey, "AWS_SESSION_TOKEN=",
		"AWS_PROFILE=", "AWS_REGION=" + miniotest.Region, "AWS_EC2_METADATA_DISABLED=true",
		"AWS_CONFIG_FILE=" + dir + "/config", "AWS_SHARED_CREDENTIALS_FILE=" + dir + "/credentials",
		"AWS_ENDPOINT_URL=", "AWS_ENDPOINT_URL_S3=",
	}
}

// s3URL is an s3:// URL for bucket on the S3 endpoint base (MinIO, or the
// proxy in front of it).
func s3URL(base, bucket, prefix string) string {
	return "s3://" + bucket + "/" + prefix + "?endpoint=" + base + "&path_style=true&region=" + miniotest.Region
}

func noSecret(t *testing.T, srv miniotest.Server, outs ...string) {
	t.Helper()
	for _, o := range outs {
		if strings.Contains(o, srv.SecretKey) {
			t.Errorf("the output shows the secret key:\n%s", o)
		}
	}
}

// TestProbeMinIO: on the MinIO server, the minio driver (which declares no
// conditional delete) gets the exclusion it declares; the s3 driver, which
// declares AWS's conditional delete, is caught out by MinIO ignoring
// If-Match on DeleteObject.
func TestProbeMinIO(t *testing.T) {
	srv := miniotest.Env(t)
	bucket := srv.NewBucket(t)
	env := minioEnv(t, srv)

	out, errOut, code := runCLI(t, env, "probe", "minio://"+srv.Addr+"/"+bucket+"/db1?tls=false")
	noSecret(t, srv, out, errOut)
	if code != 0 || !strings.Contains(out, "observed: exclusion conditional, conditional delete no") || !strings.Contains(out, "verdict:  OK") {
		t.Errorf("minio://: exit %d\n%s\n%s", code, out, errOut)
	}

	out, errOut, code = runCLI(t, env, "probe", s3URL(srv.URL(), bucket, "db1"))
	noSecret(t, srv, out, errOut)
	if code != exitProbeFailed || !strings.Contains(out, "declared: exclusion conditional, conditional delete yes") ||
		!strings.Contains(out, "observed: exclusion conditional, conditional delete no") ||
		!strings.Contains(out, "delete-if-match-wrong") {
		t.Errorf("s3:// on MinIO: exit %d\n%s\n%s", code, out, errOut)
	}
}

// TestHoldAndShowMinIO: hold and show work on a real S3 service.
func TestHoldAndShowMinIO(t *testing.T) {
	srv := miniotest.Env(t)
	bucket := srv.NewBucket(t)
	env := minioEnv(t, srv)
	u := "minio://" + srv.Addr + "/" + bucket + "/db1?tls=false"
	a := start(t, env, "hold", u, "--ttl", "3s", "--instance-id", "alpha")
	a.waitFor(`acquired\s+acquired lease db1/LEASE as instance alpha`)
	a.waitFor(`exclusion conditional`)
	out, errOut, code := runCLI(t, env, "show", u)
	noSecret(t, srv, out, errOut)
	if code != 0 || !strings.Contains(out, "holder    alpha") || !strings.Contains(out, "state     fresh") {
		t.Errorf("show: exit %d\n%s\n%s", code, out, errOut)
	}
	a.signal(sigInterrupt)
	if code := a.wait(); code != 0 {
		t.Errorf("hold exit %d", code)
	}
	// MinIO ignores If-Match on DeleteObject, so the lease is released by
	// overwriting it with a released record rather than deleted.
	if out, _, _ := runCLI(t, env, "show", u); !strings.Contains(out, "state     released") {
		t.Errorf("after release:\n%s", out)
	}
}

// TestProbeAndHoldFailClosedThroughProxy: on a service that accepts
// conditional writes but ignores their preconditions (MinIO behind the
// precondition-stripping proxy), probe reports no exclusion and exits 5,
// and hold refuses to take the lease.
func TestProbeAndHoldFailClosedThroughProxy(t *testing.T) {
	srv := miniotest.Env(t)
	bucket := srv.NewBucket(t)
	p, err := stripproxy.Start(stripproxy.Config{Upstream: srv.URL(), Region: miniotest.Region,
		Credentials: aws.Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	env := minioEnv(t, srv)
	u := s3URL(p.URL(), bucket, "db1")

	out, errOut, code := runCLI(t, env, "probe", u)
	noSecret(t, srv, out, errOut)
	if code != exitProbeFailed || !strings.Contains(out, "observed: exclusion none") ||
		!strings.Contains(out, "ignores write preconditions") || !strings.Contains(out, "FAIL") {
		t.Errorf("probe through the proxy: exit %d\n%s\n%s", code, out, errOut)
	}

	out, errOut, code = runCLI(t, env, "hold", u, "--ttl", "3s")
	noSecret(t, srv, out, errOut)
	if code != exitError || !strings.Contains(errOut, "ignores write preconditions") || !strings.Contains(errOut, "MUSHROOMDB_BACKUP_LEASE_CONDITIONAL=off") {
		t.Errorf("hold through the proxy: exit %d\n%s\n%s", code, out, errOut)
	}
	if out, _, _ := runCLI(t, env, "show", u); !strings.Contains(out, "free") {
		t.Errorf("a refused hold left a lease behind:\n%s", out)
	}
	if p.StrippedCount() == 0 {
		t.Error("the proxy stripped no precondition: the test did not go through it")
	}
}
