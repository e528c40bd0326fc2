package stripproxy_test

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	s3sdk "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/s3"
	"github.com/mushroomdb/bucketlease/drivertest"
	"github.com/mushroomdb/bucketlease/internal/objects"
	"github.com/mushroomdb/bucketlease/internal/testsupport/miniotest"
	"github.com/mushroomdb/bucketlease/internal/testsupport/stripproxy"
	"github.com/mushroomdb/bucketlease/lease"
)

// start runs a proxy in front of the test MinIO server.
func start(t *testing.T, srv miniotest.Server) *stripproxy.Proxy {
	t.Helper()
	p, err := stripproxy.Start(stripproxy.Config{
		Upstream:    srv.URL(),
		Credentials: aws.Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey},
		Region:      miniotest.Region,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	if !strings.HasPrefix(p.URL(), "http://127.0.0.1:") {
		t.Fatalf("proxy listens on %s, not loopback", p.URL())
	}
	return p
}

// TestProxyIgnoresPreconditions: through the proxy, writes that MinIO
// refuses directly are accepted, and ordinary requests (signed anew) work.
func TestProxyIgnoresPreconditions(t *testing.T) {
	srv := miniotest.Env(t)
	bucket := srv.NewBucket(t)
	p := start(t, srv)
	ctx := t.Context()
	for _, c := range []struct {
		name   string
		client *s3sdk.Client
		refuse bool
	}{
		{"direct", srv.Client(srv.URL()), true},
		{"through the proxy", srv.Client(p.URL()), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			key := strings.ReplaceAll(c.name, " ", "-")
			put := func(body string, mod func(*s3sdk.PutObjectInput)) error {
				in := &s3sdk.PutObjectInput{Bucket: &bucket, Key: &key, Body: strings.NewReader(body)}
				if mod != nil {
					mod(in)
				}
				_, err := c.client.PutObject(ctx, in)
				return err
			}
			if err := put("one", func(in *s3sdk.PutObjectInput) { in.IfNoneMatch = aws.String("*") }); err != nil {
				t.Fatalf("first If-None-Match PUT: %v", err)
			}
			err := put("two", func(in *s3sdk.PutObjectInput) { in.IfNoneMatch = aws.String("*") })
			if (err != nil) != c.refuse {
				t.Errorf("second If-None-Match PUT: err = %v, want refused = %v", err, c.refuse)
			}
			err = put("three", func(in *s3sdk.PutObjectInput) { in.IfMatch = aws.String(`"00000000000000000000000000000000"`) })
			if (err != nil) != c.refuse {
				t.Errorf("If-Match PUT with a made-up ETag: err = %v, want refused = %v", err, c.refuse)
			}
			out, err := c.client.GetObject(ctx, &s3sdk.GetObjectInput{Bucket: &bucket, Key: &key})
			if err != nil {
				t.Fatal(err)
			}
			data, _ := io.ReadAll(out.Body)
			out.Body.Close()
			want := map[bool]string{true: "one", false: "three"}[c.refuse]
			if string(data) != want {
				t.Errorf("object holds %q, want %q", data, want)
			}
		})
	}
	if n := p.StrippedCount(); n != 3 {
		t.Errorf("the proxy stripped %d headers, want 3", n)
	}
}

// TestLargeBodyThroughProxy: a 17 MiB PUT (the size drivertest uses) is
// forwarded and re-signed intact.
func TestLargeBodyThroughProxy(t *testing.T) {
	srv := miniotest.Env(t)
	p := start(t, srv)
	b := s3.New(srv.Client(p.URL()), srv.NewBucket(t))
	big := strings.Repeat("L", 17<<20)
	pa, err := b.Put(t.Context(), "big", []byte(big), driver.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	data, ga, err := objects.ReadAll(t.Context(), b, "big", 18<<20, driver.GetOptions{})
	if err != nil || len(data) != len(big) || ga.Version != pa.Version {
		t.Fatalf("read back %d bytes, version %s (put %s), %v", len(data), ga.Version, pa.Version, err)
	}
}

// TestDrivertestFailsThroughProxy is the suite's negative control on the
// wire: the real s3 driver, talking to a real server through the proxy,
// must be reported as giving no exclusion.
func TestDrivertestFailsThroughProxy(t *testing.T) {
	srv := miniotest.Env(t)
	p := start(t, srv)
	b := s3.New(srv.Client(p.URL()), srv.NewBucket(t))
	rep := drivertest.Check(t.Context(), b, drivertest.Options{})
	if rep.OK() {
		t.Fatal("drivertest reported a service that ignores preconditions as conforming")
	}
	if rep.Observed.Exclusion != driver.NoExclusion {
		t.Errorf("observed exclusion %v, want %v", rep.Observed.Exclusion, driver.NoExclusion)
	}
	failed := map[string]bool{}
	for _, r := range rep.Results {
		if !r.Passed && !r.Skipped {
			failed[r.Name] = true
			t.Logf("failed as it should: %s: %s", r.Name, r.Got)
		}
	}
	for _, name := range []string{"put-if-absent-existing", "put-if-match-stale", "put-if-match-made-up",
		"put-if-match-missing", "put-large-refused", "race-if-absent", "cas-counter"} {
		if !failed[name] {
			t.Errorf("check %s passed through a proxy that strips preconditions", name)
		}
	}
	if failed["get-missing"] || failed["put-if-absent-new"] || failed["delete-unconditional"] {
		t.Error("basic checks failed: the proxy broke more than the preconditions")
	}
}

// TestLeaseFailsClosedThroughProxy: the lease's probe notices that the
// service accepted writes it should have refused, and Acquire fails with
// ErrPreconditionsIgnored, naming the switch that would allow best-effort.
func TestLeaseFailsClosedThroughProxy(t *testing.T) {
	srv := miniotest.Env(t)
	p := start(t, srv)
	b := s3.New(srv.Client(p.URL()), srv.NewBucket(t))
	t.Setenv(lease.EnvConditional, "")
	l, err := lease.Acquire(t.Context(), bucket.New(b, "backups/db1"), nil)
	if err == nil {
		l.Release(t.Context())
		t.Fatal("Acquire succeeded on a service that ignores preconditions")
	}
	if !errors.Is(err, lease.ErrPreconditionsIgnored) {
		t.Fatalf("Acquire: %v, want ErrPreconditionsIgnored", err)
	}
	if !strings.Contains(err.Error(), "MUSHROOMDB_BACKUP_LEASE_CONDITIONAL=off") {
		t.Errorf("error %q does not name MUSHROOMDB_BACKUP_LEASE_CONDITIONAL=off", err)
	}
	if p.StrippedCount() == 0 {
		t.Error("the proxy stripped nothing; the probe did not go through it")
	}

	// Control: the same Acquire straight to MinIO succeeds.
	direct := s3.New(srv.Client(srv.URL()), srv.NewBucket(t))
	l, err = lease.Acquire(t.Context(), bucket.New(direct, "backups/db1"), nil)
	if err != nil {
		t.Fatalf("control: Acquire straight to MinIO: %v", err)
	}
	if err := l.Release(t.Context()); err != nil {
		t.Errorf("control: Release: %v", err)
	}
}

// TestStrippingAloneBreaksSigV4 is why the proxy re-signs: aws-sdk-go-v2
// signs If-None-Match, so a proxy that only removes it gets the request
// refused for its signature, not accepted without the precondition.
func TestStrippingAloneBreaksSigV4(t *testing.T) {
	srv := miniotest.Env(t)
	bucket := srv.NewBucket(t)
	up, _ := url.Parse(srv.URL())
	naive := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(up)
		r.Out.Host = r.In.Host // keep the signed Host
		r.Out.Header.Del("If-None-Match")
	}})
	defer naive.Close()
	var signed string
	_, err := srv.Client(naive.URL).PutObject(t.Context(), &s3sdk.PutObjectInput{
		Bucket: &bucket, Key: aws.String("k"), Body: strings.NewReader("x"), IfNoneMatch: aws.String("*"),
	}, s3sdk.WithAPIOptions(func(st *middleware.Stack) error {
		return st.Finalize.Add(middleware.FinalizeMiddlewareFunc("captureSignedHeaders",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				out, md, err := next.HandleFinalize(ctx, in)
				if req, ok := in.Request.(*smithyhttp.Request); ok {
					signed = req.Header.Get("Authorization")
				}
				return out, md, err
			}), middleware.After)
	}))
	if !strings.Contains(signed, "if-none-match") {
		t.Errorf("If-None-Match is not among the SDK's SignedHeaders (Authorization %q); the proxy need not re-sign", redactSig(signed))
	}
	var ae smithy.APIError
	if err == nil || !errors.As(err, &ae) || ae.ErrorCode() != "SignatureDoesNotMatch" && ae.ErrorCode() != "AccessDenied" {
		t.Errorf("PUT through a stripping, non-signing proxy: %v; want a signature error", err)
	} else {
		t.Logf("refused as expected: %s (signed headers: %s)", ae.ErrorCode(), redactSig(signed))
	}
}

// redactSig keeps only the SignedHeaders list of an Authorization header
// value: the credential and the signature are not for logs.
func redactSig(a string) string {
	_, rest, ok := strings.Cut(a, "SignedHeaders=")
	if !ok {
		return "(no SignedHeaders)"
	}
	list, _, _ := strings.Cut(rest, ",")
	return list
}
