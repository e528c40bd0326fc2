package kv_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/drivertest"

	"example.com/thirdpartydriver/kv"
	"example.com/thirdpartydriver/kvstore"
)

const token = "test-token"

// service starts a kvstore on loopback with one bucket, "leases".
func service(t *testing.T, counters bool) string {
	t.Helper()
	s := kvstore.New(token, "leases")
	s.Counters = counters
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return srv.URL
}

// options are the conformance options: the driver on a bucket that does
// not exist, and on the same bucket through a transport that may lose a
// reply.
func options(endpoint string) drivertest.Options {
	return drivertest.Options{
		MissingBucket:    kv.New(http.DefaultClient, endpoint, "no-such-bucket", token),
		WrongCredentials: kv.New(http.DefaultClient, endpoint, "leases", "wrong-token"),
		Transport: func(rt http.RoundTripper) (driver.Bucket, error) {
			return kv.New(&http.Client{Transport: rt}, endpoint, "leases", token), nil
		},
	}
}

// TestConformance is the whole of a driver author's conformance test.
func TestConformance(t *testing.T) {
	endpoint := service(t, false)
	opts := options(endpoint)
	// The same bucket by URL, for the processes exclusion-across-processes
	// starts; they take the token from the environment, as OpenURL does.
	t.Setenv(kv.EnvToken, token)
	opts.URL = "kv://" + strings.TrimPrefix(endpoint, "http://") + "/leases?tls=false"
	drivertest.Run(t, kv.New(http.DefaultClient, endpoint, "leases", token), opts)
}

// TestBrokenVariantFailsWithTheRule runs the suite against the same driver
// on a service whose versions are per-key counters: the version-unguessable
// check fails, first, naming the rule, rather than a lease check blaming
// the service.
func TestBrokenVariantFailsWithTheRule(t *testing.T) {
	endpoint := service(t, true)
	rep := drivertest.Check(context.Background(), kv.New(http.DefaultClient, endpoint, "leases", token), options(endpoint))
	if rep.OK() {
		t.Fatal("the suite passed a driver whose versions are counters")
	}
	for _, r := range rep.Results {
		if r.Passed || r.Skipped {
			continue
		}
		if r.Name != "version-unguessable" || !strings.Contains(r.Got, "a version must not be predictable from an earlier one") {
			t.Fatalf("the first failure is %s: %s; want version-unguessable naming the rule", r.Name, r.Got)
		}
		t.Logf("%s: %s", r.Name, r.Got)
		return
	}
}

// TestPermission: a wrong token is driver.ErrPermission.
func TestPermission(t *testing.T) {
	b := kv.New(http.DefaultClient, service(t, false), "leases", "wrong-token")
	if _, _, err := b.Get(context.Background(), "k", driver.GetOptions{}); !errors.Is(err, driver.ErrPermission) {
		t.Fatalf("Get with a wrong token: %v, want ErrPermission", err)
	}
}

// TestURLs checks the kv:// URLs that importing kv registers.
func TestURLs(t *testing.T) {
	t.Setenv(kv.EnvToken, token)
	drivertest.RunURLs(t, drivertest.URLCases{
		Valid:   []string{"kv://127.0.0.1:1/leases/db1?tls=false"},
		Invalid: map[string]string{"kv://127.0.0.1:1/leases/db1?tsl=false": `unknown query parameter "tsl"`, "kv://u:hunter2@h/b": "no credentials"},
		Secrets: []string{"hunter2"},
	})
}

// TestLocate: two spellings of one kv:// place are located as one place,
// and another server or bucket is another.
func TestLocate(t *testing.T) {
	key := func(raw string) string {
		t.Helper()
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		bucket, prefix, endpoint, err := kv.Locate(u)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%q %q %q", bucket, prefix, endpoint)
	}
	if a, b := key("kv://H:1/leases/db1/?tls=false"), key("kv://h:1/leases/db1?tls=0"); a != b {
		t.Errorf("one place, two keys: %s and %s", a, b)
	}
	for _, other := range []string{"kv://h:1/leases/db1", "kv://h:2/leases/db1?tls=false", "kv://h:1/other/db1?tls=false"} {
		if key(other) == key("kv://h:1/leases/db1?tls=false") {
			t.Errorf("%s shares a key with kv://h:1/leases/db1?tls=false", other)
		}
	}
}
