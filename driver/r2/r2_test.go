package r2_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/r2"
	"github.com/mushroomdb/bucketlease/drivertest"
	"github.com/mushroomdb/bucketlease/internal/location"
	"github.com/mushroomdb/bucketlease/internal/testsupport/miniotest"
	"github.com/mushroomdb/bucketlease/internal/testsupport/testenv"
)

const account = "0123456789abcdef0123456789abcdef"

// TestConformanceMinIO opens the driver by URL with its endpoint pointed at
// the MinIO server from scripts/test, so that the R2 profile (region auto,
// path style, checksums only when required, no conditional delete) is what
// runs the suite, with credentials taken from the environment as on R2.
func TestConformanceMinIO(t *testing.T) {
	srv := miniotest.Env(t)
	bucket := srv.NewBucket(t)
	testenv.IsolateAWS(t)
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	u := "r2://" + account + "/" + bucket + "/ci/run?endpoint=" + srv.URL()
	b, prefix, err := location.Open(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	if prefix != "ci/run" {
		t.Errorf("prefix = %q", prefix)
	}
	drivertest.Run(t, b, drivertest.Options{Prefix: prefix, URL: u})
}

func TestCapabilities(t *testing.T) {
	got := r2.New(nil, "b").Capabilities()
	if got != (driver.Capabilities{Exclusion: driver.Conditional, ConditionalDelete: false, KeyWriteInterval: time.Second, Metadata: true}) {
		t.Errorf("Capabilities() = %+v", got)
	}
}

// TestConditionalDeleteNotSent: Delete with IfMatch is refused before any
// request; the nil client would panic if one were sent.
func TestConditionalDeleteNotSent(t *testing.T) {
	err := r2.New(nil, "b").Delete(context.Background(), "p/LEASE", driver.IfMatch(`"abc"`))
	if !errors.Is(err, driver.ErrUnsupported) {
		t.Fatalf("Delete IfMatch: %v, want ErrUnsupported", err)
	}
	if !strings.Contains(err.Error(), "r2: delete p/LEASE") {
		t.Errorf("error %q does not name the driver and key", err)
	}
}

func TestClientOptions(t *testing.T) {
	o := r2.ClientOptions(account)
	if o.Endpoint != "https://"+account+".r2.cloudflarestorage.com" || o.Region != "auto" || !o.PathStyle || !o.ChecksumWhenRequired {
		t.Errorf("ClientOptions = %+v", o)
	}
}

func TestOpenURL(t *testing.T) {
	testenv.IsolateAWS(t)
	good := []string{
		"r2://" + account + "/bucket/a/b",
		"r2://" + account + "/bucket",
		"r2://" + account + "/bucket/p?endpoint=https://" + account + ".eu.r2.cloudflarestorage.com",
	}
	bad := map[string]string{
		"r2://" + account + "/bucket/p?region=auto":   `unknown query parameter "region"`,
		"r2://" + account + "/bucket/p?token=hunter2": `unknown query parameter "token"`,
		"r2://key:hunter2@" + account + "/bucket/p":   "must not hold credentials",
		"r2://" + account:        "names no bucket",
		"r2://" + account + "/":  "names no bucket",
		"r2:///bucket/p":         "no valid account ID",
		"r2://acc_ount/bucket/p": "no valid account ID",
		"r2://" + account + "/bucket/p?endpoint=file:///x":  "http:// or https://",
		"r2://" + account + "/bucket/p?endpoint=http://u@h": "must not hold credentials",
		// The bucket (container) name must follow the service's naming rule.
		"r2://" + account + "/Bucket_Bad/p": "lower-case letters",
		"r2://" + account + "/my.bucket/p":  "no dots",
		"r2://" + account + "/ab/p":         "3 to 63",
		// A secret nested in the endpoint, encoded once or twice, is refused.
		"r2://" + account + "/bucket/p?endpoint=https%3A%2F%2Fh%2F%3Fkey%3Dkey-hunter2": "query",
	}
	drivertest.RunURLs(t, drivertest.URLCases{Valid: good, Invalid: bad, Secrets: []string{"hunter2", "key-hunter2"}})
}

// TestCloud runs the suite against a real R2 bucket named by
// BUCKETLEASE_TEST_R2_URL (r2://ACCOUNT_ID/BUCKET/PREFIX), with an R2 API
// token in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.
func TestCloud(t *testing.T) {
	env := testenv.Cloud(t, "Cloudflare R2", "BUCKETLEASE_TEST_R2_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
	b, prefix, err := location.Open(t.Context(), env["BUCKETLEASE_TEST_R2_URL"])
	if err != nil {
		t.Fatal(err)
	}
	drivertest.Run(t, b, drivertest.Options{Prefix: prefix + "/drivertest", URL: env["BUCKETLEASE_TEST_R2_URL"]})
}

// TestWireHeaders records what the R2 profile puts on the wire: the
// precondition, and none of the flexible-checksum headers that
// aws-sdk-go-v2 sends by default (and that R2 has refused with 501).
// The default S3 profile is the control: it does send them.
func TestWireHeaders(t *testing.T) {
	testenv.IsolateAWS(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "not-a-secret")
	var (
		mu   sync.Mutex
		seen []http.Header
	)
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
		w.Header().Set("ETag", `"0123456789abcdef0123456789abcdef"`)
	}))
	defer fake.Close()

	checksumHeaders := func(h http.Header) []string {
		var names []string
		for k := range h {
			if strings.HasPrefix(strings.ToLower(k), "x-amz-checksum-") || strings.EqualFold(k, "x-amz-sdk-checksum-algorithm") {
				names = append(names, k)
			}
		}
		return names
	}
	put := func(rawURL string) http.Header {
		t.Helper()
		b, prefix, err := location.Open(t.Context(), rawURL)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Put(t.Context(), prefix+"/LEASE", []byte("x"), driver.PutOptions{If: driver.IfAbsent()}); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		return seen[len(seen)-1]
	}

	h := put("r2://" + account + "/bucket/p?endpoint=" + fake.URL)
	if h.Get("If-None-Match") != "*" {
		t.Errorf("R2 PUT IfAbsent sent If-None-Match %q", h.Get("If-None-Match"))
	}
	if names := checksumHeaders(h); len(names) > 0 {
		t.Errorf("the R2 profile sent checksum headers %v", names)
	}
	h = put("s3://bucket/p?region=us-east-1&path_style=true&endpoint=" + fake.URL)
	if len(checksumHeaders(h)) == 0 {
		t.Error("control: the default S3 profile sent no checksum header; the R2 test above proves nothing")
	}
}

// TestKeyWriteIntervalOnlyForR2Itself: a URL on R2's own endpoint (the
// account's, or a jurisdiction's) declares one write per key per second;
// one whose endpoint parameter names another S3 server (an emulator, a
// test's MinIO) declares none.
func TestKeyWriteIntervalOnlyForR2Itself(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	for u, want := range map[string]time.Duration{
		"r2://0123456789abcdef0123456789abcdef/bkt/p": time.Second,
		"r2://0123456789abcdef0123456789abcdef/bkt/p?endpoint=https://0123456789abcdef0123456789abcdef.eu.r2.cloudflarestorage.com": time.Second,
		"r2://0123456789abcdef0123456789abcdef/bkt/p?endpoint=http://127.0.0.1:9000":                                                0,
	} {
		b, _, err := location.Open(t.Context(), u)
		if err != nil {
			t.Fatal(err)
		}
		if got := b.Capabilities().KeyWriteInterval; got != want {
			t.Errorf("%s: KeyWriteInterval %v, want %v", u, got, want)
		}
		location.Close(b)
	}
}
