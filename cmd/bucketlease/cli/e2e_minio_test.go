//go:build unix

package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	s3sdk "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/exitcode"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/report"
	"github.com/mushroomdb/bucketlease/internal/testsupport/miniotest"
	"github.com/mushroomdb/bucketlease/internal/testsupport/stripproxy"
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
// conditional delete) gets the exclusion it declares; the s3 driver is
// caught out if it declares a conditional delete, which MinIO ignores.
func TestProbeMinIO(t *testing.T) {
	srv := miniotest.Env(t)
	bucket := srv.NewBucket(t)
	env := minioEnv(t, srv)

	out, errOut, code := runCLI(t, env, "probe", "minio://"+srv.Addr+"/"+bucket+"/db1?tls=false")
	noSecret(t, srv, out, errOut)
	if code != 0 || !strings.Contains(out, "observed: exclusion conditional, conditional delete no") || !strings.Contains(out, "verdict:  OK") {
		t.Errorf("minio://: exit %d\n%s\n%s", code, out, errOut)
	}

	// The s3 driver on MinIO: whatever it declares about conditional
	// delete, probe must agree with what MinIO does (it ignores If-Match on
	// DeleteObject), and exit 5 if the declaration claims more.
	out, errOut, code = runCLI(t, env, "probe", s3URL(srv.URL(), bucket, "db1"))
	noSecret(t, srv, out, errOut)
	claims := strings.Contains(out, "declared: exclusion conditional, conditional delete yes")
	if !strings.Contains(out, "observed: exclusion conditional, conditional delete no") ||
		claims && (code != exitcode.ProbeFailed || !strings.Contains(out, "delete-if-match-wrong")) || !claims && code != 0 {
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
	if code != exitcode.ProbeFailed || !strings.Contains(out, "observed: exclusion none") ||
		!strings.Contains(out, "ignores write preconditions") || !strings.Contains(out, "FAIL") {
		t.Errorf("probe through the proxy: exit %d\n%s\n%s", code, out, errOut)
	}

	// TTL 6s: 2s per request; at 3s, 1s was too little for one of the
	// acquire's several probe requests on a loaded machine.
	out, errOut, code = runCLI(t, env, "hold", u, "--ttl", "6s")
	noSecret(t, srv, out, errOut)
	if code != exitcode.ProbeFailed || !strings.Contains(errOut, "ignores write preconditions") || !strings.Contains(errOut, "MUSHROOMDB_BACKUP_LEASE_CONDITIONAL=off") {
		t.Errorf("hold through the proxy: exit %d\n%s\n%s", code, out, errOut)
	}
	// The proxy strips headers from every request, so the scratch key
	// that proves the path catches it before anything is written to the
	// lease object: the prefix stays free.
	if !strings.Contains(errOut, "nothing was written to the lease object") {
		t.Errorf("hold through the proxy did not say that it wrote nothing to the lease object:\n%s", errOut)
	}
	if out, _, _ := runCLI(t, env, "show", u); !strings.Contains(out, "free") {
		t.Errorf("a hold refused before its first write left the prefix not free:\n%s", out)
	}
	if p.StrippedCount() == 0 {
		t.Error("the proxy stripped no precondition: the test did not go through it")
	}
}

// minioURLs are the three URL forms that reach a MinIO server: minio://,
// s3:// with an endpoint, and r2:// with an endpoint.
func minioURLs(srv miniotest.Server, bucket, prefix string) map[string]string {
	return map[string]string{
		"minio": "minio://" + srv.Addr + "/" + bucket + "/" + prefix + "?tls=false",
		"s3":    s3URL(srv.URL(), bucket, prefix),
		"r2":    "r2://0123456789abcdef0123456789abcdef/" + bucket + "/" + prefix + "?endpoint=" + srv.URL(),
	}
}

// TestFencedHolderReleaseMinIO is the fenced-holder-release
// scenario through "bucketlease hold" on a real MinIO server: holder A
// cannot renew (it is stopped), B takes the lease over after a TTL, A is
// continued, finds its lease ended and releases: B's lease object is still
// there and fresh, and a third contender sees B as the holder. (TTL 6s: each
// request gets 2s, which an acquire's probe requests need on a loaded
// machine.)
func TestFencedHolderReleaseMinIO(t *testing.T) {
	srv := miniotest.Env(t)
	bucket := srv.NewBucket(t)
	env := minioEnv(t, srv)
	for form, u := range minioURLs(srv, bucket, "fenced-"+strings.ToLower(t.Name())) {
		t.Run(form, func(t *testing.T) {
			u = strings.Replace(u, "fenced-", "fenced-"+form+"-", 1)
			a := start(t, env, "hold", u, "--ttl", "6s", "--instance-id", "alpha")
			a.waitFor(`holding\s+holding lease`)
			a.signal(syscall.SIGSTOP)
			b := start(t, env, "hold", u, "--ttl", "6s", "--instance-id", "beta", "--wait")
			b.waitFor(`took-over\s+instance beta took over`)
			before := showWith(t, env, u)
			a.signal(syscall.SIGCONT)
			if code := a.wait(); code != exitcode.LeaseEnded {
				t.Errorf("alpha exit %d after it was continued, want %d", code, exitcode.LeaseEnded)
			}
			if out := a.output(); strings.Contains(out, "released lease") || !strings.Contains(out, "beta") {
				t.Errorf("alpha's report:\n%s", out)
			}
			after := showWith(t, env, u)
			if after.Holder != "beta" || after.State != "fresh" || after.AcquiredAt != before.AcquiredAt {
				t.Errorf("after alpha's release, show says %+v (before: %+v); want beta's lease untouched", after, before)
			}
			_, errOut, code := runCLI(t, env, "hold", u, "--ttl", "6s", "--instance-id", "gamma")
			noSecret(t, srv, errOut)
			if code != exitcode.Held || !strings.Contains(errOut, "held by instance beta") {
				t.Errorf("a third contender: exit %d:\n%s", code, errOut)
			}
			b.signal(syscall.SIGTERM)
			if code := b.wait(); code != 0 {
				t.Errorf("beta exit %d", code)
			}
		})
	}
}

// showWith runs show --json with env.
func showWith(t *testing.T, env []string, u string) report.ShowJSON {
	t.Helper()
	out, errOut, code := runCLI(t, env, "show", u, "--json")
	if code != 0 {
		t.Fatalf("show: exit %d: %s", code, errOut)
	}
	var s report.ShowJSON
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("show printed %q: %v", out, err)
	}
	return s
}

// TestProbeErrorsMinIO: a wrong secret key, a missing bucket and a
// --timeout too short for any request are errors (exit 1, with the
// cause), not a verdict that the service ignores preconditions (exit 5).
func TestProbeErrorsMinIO(t *testing.T) {
	srv := miniotest.Env(t)
	bucket := srv.NewBucket(t)
	env := minioEnv(t, srv)
	wrong := append(append([]string{}, env...), "MINIO_SECRET_KEY=not-the-secret", "AWS_SECRET_ACCESS_KEY=not-the-secret")
	cases := []struct {
		name string
		env  []string
		args []string
	}{
		{"wrong secret, minio", wrong, []string{"probe", "minio://" + srv.Addr + "/" + bucket + "/p?tls=false"}},
		{"wrong secret, s3", wrong, []string{"probe", s3URL(srv.URL(), bucket, "p")}},
		{"missing bucket", env, []string{"probe", "minio://" + srv.Addr + "/no-such-bucket-here/p?tls=false"}},
		{"timeout", env, []string{"probe", "minio://" + srv.Addr + "/" + bucket + "/p?tls=false", "--timeout", "1ns"}},
	}
	for _, c := range cases {
		out, errOut, code := runCLI(t, c.env, c.args...)
		noSecret(t, srv, out, errOut)
		if code != exitcode.Failure || strings.Contains(out+errOut, "ignores write preconditions") || strings.Contains(out, "observed: exclusion none") {
			t.Errorf("%s: exit %d, want %d:\n%s\n%s", c.name, code, exitcode.Failure, out, errOut)
		}
	}
	// The control: the same server, with the right secret, passes.
	if _, errOut, code := runCLI(t, env, "probe", "minio://"+srv.Addr+"/"+bucket+"/p?tls=false"); code != 0 {
		t.Errorf("the control: exit %d: %s", code, errOut)
	}
	// A probe that runs out of time midway leaves no scratch key behind.
	for _, timeout := range []string{"100ms", "400ms"} {
		runCLI(t, env, "probe", "minio://"+srv.Addr+"/"+bucket+"/left-"+timeout+"?tls=false", "--timeout", timeout)
		out, err := srv.Client(srv.URL()).ListObjectsV2(t.Context(), &s3sdk.ListObjectsV2Input{
			Bucket: aws.String(bucket), Prefix: aws.String("left-" + timeout + "/")})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range out.Contents {
			t.Errorf("--timeout %s left %s", timeout, aws.ToString(o.Key))
		}
	}
	_ = fmt.Sprint()
}

// TestCredentialHintMinIO: a wrong secret key gets the hint naming the
// variables the driver reads, on minio:// as on s3://; a missing bucket
// (not a credentials problem) gets none.
func TestCredentialHintMinIO(t *testing.T) {
	srv := miniotest.Env(t)
	bucket := srv.NewBucket(t)
	env := minioEnv(t, srv)
	wrong := append(append([]string{}, env...), "MINIO_SECRET_KEY=not-the-secret", "AWS_SECRET_ACCESS_KEY=not-the-secret")
	for form, u := range minioURLs(srv, bucket, "hint") {
		_, errOut, code := runCLI(t, wrong, "show", u)
		noSecret(t, srv, errOut)
		if code != exitcode.Failure || !strings.Contains(errOut, "hint: check the credentials; the "+form+" driver reads") {
			t.Errorf("%s with a wrong secret: exit %d:\n%s", form, code, errOut)
		}
	}
	_, errOut, _ := runCLI(t, env, "show", "minio://"+srv.Addr+"/no-such-bucket-here/p?tls=false")
	if strings.Contains(errOut, "hint: check the credentials") {
		t.Errorf("a missing bucket got the credentials hint:\n%s", errOut)
	}
}
