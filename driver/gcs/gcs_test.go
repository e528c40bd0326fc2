package gcs_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/gcs"
	"github.com/mushroomdb/bucketlease/drivertest"
	"github.com/mushroomdb/bucketlease/internal/location"
	"github.com/mushroomdb/bucketlease/internal/objects"
	"github.com/mushroomdb/bucketlease/internal/testsupport/testenv"
)

// emulatorDeviations are the drivertest checks fake-gcs-server is known to
// fail where Cloud Storage passes. This is the only list of them; drivertest
// fails the run if one of them starts passing, so a fixed emulator is noticed.
var emulatorDeviations = map[string]string{
	// fake-gcs-server's deleteObject never reads ifGenerationMatch, so a
	// Delete with a stale or made-up generation removes the object
	// (fsouza/fake-gcs-server#1282). A Delete under IfMatch of a missing
	// key still fails (404, which the driver reports as ErrPrecondition),
	// so delete-if-match-missing passes and is not listed.
	"delete-if-match-wrong": "fake-gcs-server ignores ifGenerationMatch on DELETE (fsouza/fake-gcs-server#1282)",
}

// emulator returns the fake-gcs-server endpoint started by scripts/test.
func emulator(t *testing.T) string {
	t.Helper()
	return testenv.Emulator(t, "fake-gcs-server", "BUCKETLEASE_TEST_GCS_ENDPOINT")["BUCKETLEASE_TEST_GCS_ENDPOINT"]
}

// newBucket creates a fresh bucket on the emulator and returns its name.
func newBucket(t *testing.T, endpoint string) string {
	t.Helper()
	ctx := t.Context()
	client, err := storage.NewClient(ctx, option.WithEndpoint(endpoint+"/storage/v1/"), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	var b [6]byte
	rand.Read(b[:])
	name := "bucketlease-" + hex.EncodeToString(b[:])
	if err := client.Bucket(name).Create(ctx, "bucketlease-test", nil); err != nil {
		t.Fatalf("create bucket %s: %v", name, err)
	}
	return name
}

// TestEmulatorConformance opens the driver by URL, as a user would, and runs
// the whole conformance suite against fake-gcs-server.
func TestEmulatorConformance(t *testing.T) {
	endpoint := emulator(t)
	bucket := newBucket(t, endpoint)
	u := "gs://" + bucket + "/ci/run?endpoint=" + endpoint
	b, prefix, err := location.Open(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	if prefix != "ci/run" {
		t.Fatalf("prefix = %q", prefix)
	}
	drivertest.Run(t, b, drivertest.Options{Prefix: prefix, KnownDeviations: emulatorDeviations, URL: u})
}

// TestEmulatorErrors checks the error chain on the wire: the kind for
// errors.Is, the SDK's own error for errors.As, and the key in the message.
func TestEmulatorErrors(t *testing.T) {
	endpoint := emulator(t)
	b, _, err := location.Open(t.Context(), "gs://"+newBucket(t, endpoint)+"?endpoint="+endpoint)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	v, err := b.Put(ctx, "k", []byte("one"), driver.PutOptions{If: driver.IfAbsent()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Put(ctx, "k", []byte("two"), driver.PutOptions{If: driver.IfAbsent()})
	var ge *googleapi.Error
	if !errors.Is(err, driver.ErrPrecondition) || !errors.As(err, &ge) || ge.Code != http.StatusPreconditionFailed {
		t.Fatalf("IfAbsent on an existing key: %v; want ErrPrecondition wrapping a 412 *googleapi.Error", err)
	}
	if !strings.Contains(err.Error(), "put k") {
		t.Errorf("the error %q does not name the key", err)
	}
	_, err = b.Put(ctx, "k", []byte("two"), driver.PutOptions{If: driver.IfMatch(objects.FakeVersion(v.Version))})
	if !errors.As(err, &ge) || ge.Code != http.StatusPreconditionFailed {
		t.Fatalf("IfMatch(made-up) was not refused by the service with 412: %v", err)
	}
	_, _, err = b.Get(ctx, "nope", driver.GetOptions{})
	if !errors.Is(err, driver.ErrNotExist) || !errors.Is(err, storage.ErrObjectNotExist) {
		t.Fatalf("Get of a missing key: %v", err)
	}
}

// TestVersionNotAGeneration shows that IfMatch of a Version that is not a
// positive decimal generation is ErrPrecondition without any request: in
// particular "0", which Cloud Storage would read as "does not exist".
func TestVersionNotAGeneration(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.Error(w, "this test expects no request", http.StatusTeapot)
	}))
	defer srv.Close()
	b, _, err := location.Open(t.Context(), "gs://bkt?endpoint="+srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []driver.Version{"", "0", "-3", "007", "+7", "12a", `"12"`, "99999999999999999999"} {
		if _, err := b.Put(t.Context(), "k", []byte("x"), driver.PutOptions{If: driver.IfMatch(v)}); !errors.Is(err, driver.ErrPrecondition) {
			t.Errorf("Put IfMatch(%q): %v, want ErrPrecondition", v, err)
		}
		if err := b.Delete(t.Context(), "k", driver.IfMatch(v)); !errors.Is(err, driver.ErrPrecondition) {
			t.Errorf("Delete IfMatch(%q): %v, want ErrPrecondition", v, err)
		}
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests were sent for versions that are not generations", n)
	}
	// A well-formed generation is sent: the same server now sees a request.
	if _, err := b.Put(t.Context(), "k", []byte("x"), driver.PutOptions{If: driver.IfMatch("7")}); err == nil || requests.Load() == 0 {
		t.Errorf("Put IfMatch(7) = %v after %d requests; want a request and the server's error", err, requests.Load())
	}
}

func TestOpenURL(t *testing.T) {
	ctx := context.Background()
	_, prefix, err := location.Open(ctx, "gs://bkt/backups/db1/?endpoint=http://127.0.0.1:1")
	if err != nil || prefix != "backups/db1" {
		t.Fatalf("Open = %q, %v", prefix, err)
	}
	drivertest.RunURLs(t, drivertest.URLCases{Secrets: []string{"hunter2", "tok-hunter2"}, Invalid: map[string]string{
		"gs://bkt/p?endpiont=http://127.0.0.1:1": `unknown query parameter "endpiont"`,
		"gs://bkt/p?project=x":                   `unknown query parameter "project"`,
		"gs:///p":                                "names no bucket",
		"gs://bkt/p?endpoint=127.0.0.1:4443":     "endpoint parameter must be a URL",
		"gs://bkt/p?endpoint=ftp://127.0.0.1":    "endpoint parameter must be a URL",
		"gs://bkt/p?endpoint=a&endpoint=b":       "given 2 times",
		"gs://someone:hunter2@bkt/p":             "carry no credentials",
		"gs://bkt/p?endpoint=http://user@h:1/x":  "endpoint parameter must be a URL",
		// The bucket (container) name must follow the service's naming rule.
		"gs://bkt:443/p":    "bucket name",
		"gs://Bucket_Bad/p": "bucket name",
		"gs://[::1]/p":      "bucket name",
		"gs://googbucket/p": "goog",
		// A secret nested in the endpoint, encoded once or twice, is refused.
		"gs://bkt/p?endpoint=https%3A%2F%2Fh%2Fx%3Ftoken%3Dtok-hunter2":     "endpoint parameter must be a URL",
		"gs://bkt/p?endpoint=https%253A%252F%252Fh%253Fkey%253Dtok-hunter2": "endpoint parameter must be a URL",
	}})
}

// TestCloud runs the suite against a real Cloud Storage bucket, with no
// deviations allowed: the service must honour every condition.
func TestCloud(t *testing.T) {
	raw := testenv.Cloud(t, "Google Cloud Storage", "BUCKETLEASE_TEST_GCS_URL")["BUCKETLEASE_TEST_GCS_URL"]
	b, prefix, err := location.Open(t.Context(), raw)
	if err != nil {
		t.Fatal(err)
	}
	drivertest.Run(t, b, drivertest.Options{Prefix: prefix + "/drivertest", URL: raw})
}

// TestMetadataReadOnlyWhenAsked: a Get sends the one read request and
// returns no metadata unless GetOptions.Metadata asks for it; under it the
// metadata the Put stored comes back (read with a second request where the
// read response does not carry it). Both return the service's time, as
// ServiceTimeTransport reads it.
func TestMetadataReadOnlyWhenAsked(t *testing.T) {
	endpoint := emulator(t)
	counter := &requestCounter{}
	b := gcs.New(client(t, endpoint, gcs.ServiceTimeTransport(counter)), newBucket(t, endpoint))
	ctx := t.Context()
	pa, err := b.Put(ctx, "k", []byte("body"), driver.PutOptions{If: driver.IfAbsent(), Metadata: driver.Metadata{"epoch": "7"}})
	if err != nil {
		t.Fatal(err)
	}
	get := func(opts driver.GetOptions) (driver.Attrs, int) {
		t.Helper()
		before, _ := counter.counts()
		rc, a, err := b.Get(ctx, "k", opts)
		if err != nil {
			t.Fatal(err)
		}
		rc.Close()
		after, _ := counter.counts()
		return a, after - before
	}
	if a, n := get(driver.GetOptions{}); n != 1 || a.Metadata != nil || a.Version != pa.Version || a.Time.Date.IsZero() {
		t.Errorf("a Get without GetOptions.Metadata: %+v in %d requests; want version %s, no metadata, the service's time, in one request",
			a, n, pa.Version)
	}
	if a, n := get(driver.GetOptions{Metadata: true}); a.Metadata["epoch"] != "7" || len(a.Metadata) != 1 || a.Version != pa.Version || a.Time.Date.IsZero() {
		t.Errorf("a Get under GetOptions.Metadata: %+v in %d requests; want version %s, epoch=7 and the service's time", a, n, pa.Version)
	}
}
