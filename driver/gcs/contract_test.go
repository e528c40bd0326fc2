package gcs_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"cloud.google.com/go/auth"
	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/gcs"
	"github.com/mushroomdb/bucketlease/drivertest"
	"github.com/mushroomdb/bucketlease/internal/location"
)

// client returns a client for the emulator through rt (nil: the default).
func client(t *testing.T, endpoint string, rt http.RoundTripper) *storage.Client {
	t.Helper()
	opts := []option.ClientOption{option.WithEndpoint(endpoint + "/storage/v1/"), storage.WithJSONReads()}
	if rt != nil {
		opts = append(opts, option.WithHTTPClient(&http.Client{Transport: rt}))
	} else {
		opts = append(opts, option.WithoutAuthentication())
	}
	c, err := storage.NewClient(t.Context(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestConformanceWithFaults runs the suite with a missing bucket and a
// Transport hook (for the wire checks) against fake-gcs-server.
func TestConformanceWithFaults(t *testing.T) {
	endpoint := emulator(t)
	bucket := newBucket(t, endpoint)
	drivertest.Run(t, gcs.New(client(t, endpoint, nil), bucket), drivertest.Options{
		KnownDeviations: emulatorDeviations,
		MissingBucket:   gcs.New(client(t, endpoint, nil), "bucketlease-no-such-bucket"),
		Transport: func(rt http.RoundTripper) (driver.Bucket, error) {
			return gcs.New(client(t, endpoint, rt), bucket), nil
		},
	})
}

// TestMissingBucket: the client library turns every 404 into
// ErrObjectNotExist, so a Get in a bucket that does not exist read as a
// missing key, and the lease looked free. It is ErrBucketNotExist now, on
// every operation.
func TestMissingBucket(t *testing.T) {
	endpoint := emulator(t)
	ctx := t.Context()
	b := gcs.New(client(t, endpoint, nil), "no-such-bucket-typo")
	_, _, err := b.Get(ctx, "db1/LEASE", driver.GetOptions{})
	if !errors.Is(err, driver.ErrBucketNotExist) || errors.Is(err, driver.ErrNotExist) {
		t.Errorf("Get in a missing bucket: %v, want ErrBucketNotExist and not ErrNotExist", err)
	}
	if _, err := b.Put(ctx, "db1/LEASE", []byte("x"), driver.PutOptions{If: driver.IfMatch("1700000000000001")}); !errors.Is(err, driver.ErrBucketNotExist) || errors.Is(err, driver.ErrPrecondition) {
		t.Errorf("Put IfMatch in a missing bucket: %v, want ErrBucketNotExist", err)
	}
	if _, err := b.Put(ctx, "db1/LEASE", []byte("x"), driver.PutOptions{If: driver.IfAbsent()}); !errors.Is(err, driver.ErrBucketNotExist) {
		t.Errorf("Put IfAbsent in a missing bucket: %v, want ErrBucketNotExist", err)
	}
	if err := b.Delete(ctx, "db1/LEASE", driver.Condition{}); !errors.Is(err, driver.ErrBucketNotExist) {
		t.Errorf("Delete in a missing bucket: %v, want ErrBucketNotExist", err)
	}
}

// TestEmptyKeyRefused: fake-gcs-server stores an object under the empty
// name; the driver refuses it (driver.CheckKey) before any request.
func TestEmptyKeyRefused(t *testing.T) {
	endpoint := emulator(t)
	b := gcs.New(client(t, endpoint, nil), newBucket(t, endpoint))
	for _, k := range []string{"", "/a", "a/../b", "a\nb"} {
		if _, err := b.Put(t.Context(), k, []byte("x"), driver.PutOptions{If: driver.IfAbsent()}); !errors.Is(err, driver.ErrInvalidKey) {
			t.Errorf("Put %q: %v, want ErrInvalidKey", k, err)
		}
	}
}

// fakeService answers every request with status and a JSON error body with
// the given reason, as Cloud Storage does.
func fakeService(t *testing.T, status int, reason string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"error":{"code":` + strconv.Itoa(status) + `,"message":"refused","errors":[{"reason":"` + reason + `","message":"refused"}]}}`))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestPermission: fake-gcs-server checks no credentials, so the
// real client library is pointed at a loopback server answering 401 and 403
// as Cloud Storage does; both are ErrPermission with the googleapi.Error in
// the chain.
func TestPermission(t *testing.T) {
	for _, status := range []int{http.StatusUnauthorized, http.StatusForbidden} {
		url := fakeService(t, status, "forbidden")
		b, _, err := location.Open(t.Context(), "gs://bkt/p?endpoint="+url)
		if err != nil {
			t.Fatal(err)
		}
		var ge *googleapi.Error
		if _, _, err := b.Get(t.Context(), "p/LEASE", driver.GetOptions{}); !errors.Is(err, driver.ErrPermission) || !errors.As(err, &ge) {
			t.Errorf("Get answered %d: %v, want ErrPermission", status, err)
		}
		if _, err := b.Put(t.Context(), "p/LEASE", []byte("x"), driver.PutOptions{If: driver.IfAbsent()}); !errors.Is(err, driver.ErrPermission) {
			t.Errorf("Put answered %d: %v, want ErrPermission", status, err)
		}
		if err := b.Delete(t.Context(), "p/LEASE", driver.Condition{}); !errors.Is(err, driver.ErrPermission) {
			t.Errorf("Delete answered %d: %v, want ErrPermission", status, err)
		}
	}
}

// TestOther412NotAPrecondition: a 412 whose reason is not
// conditionNotMet is not a refused condition.
func TestOther412NotAPrecondition(t *testing.T) {
	url := fakeService(t, http.StatusPreconditionFailed, "retentionPolicyNotMet")
	b, _, err := location.Open(t.Context(), "gs://bkt/p?endpoint="+url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(t.Context(), "p/LEASE", []byte("x"), driver.PutOptions{If: driver.IfMatch("1700000000000001")}); err == nil || errors.Is(err, driver.ErrPrecondition) {
		t.Errorf("Put answered 412 retentionPolicyNotMet: %v, want an error that is not ErrPrecondition", err)
	}
	url = fakeService(t, http.StatusPreconditionFailed, "conditionNotMet")
	b, _, _ = location.Open(t.Context(), "gs://bkt/p?endpoint="+url)
	if _, err := b.Put(t.Context(), "p/LEASE", []byte("x"), driver.PutOptions{If: driver.IfMatch("1700000000000001")}); !errors.Is(err, driver.ErrPrecondition) {
		t.Errorf("Put answered 412 conditionNotMet: %v, want ErrPrecondition", err)
	}
}

// TestTokenRefused: credentials whose token request is refused
// (here a service account whose token endpoint, on loopback, answers 401)
// are ErrPermission, with the auth library's error in the chain.
func TestTokenRefused(t *testing.T) {
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":"invalid_grant","error_description":"Invalid JWT Signature."}`))
	}))
	defer tokens.Close()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	sa, _ := json.Marshal(map[string]string{
		"type": "service_account", "project_id": "p", "private_key_id": "k1", "private_key": string(pemKey),
		"client_email": "sa@p.iam.gserviceaccount.com", "client_id": "1", "token_uri": tokens.URL,
	})
	c, err := storage.NewClient(t.Context(), option.WithEndpoint(fakeService(t, http.StatusOK, "")+"/storage/v1/"),
		option.WithAuthCredentialsJSON(option.ServiceAccount, sa))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var ae *auth.Error
	if _, _, err := gcs.New(c, "bkt").Get(t.Context(), "k", driver.GetOptions{}); !errors.Is(err, driver.ErrPermission) || !errors.As(err, &ae) {
		t.Fatalf("Get with refused credentials: %v, want ErrPermission with *auth.Error", err)
	}
}
