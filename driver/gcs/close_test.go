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
	"os"
	"path/filepath"
	"testing"

	"cloud.google.com/go/auth"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/gcs"
	"github.com/mushroomdb/bucketlease/internal/location"
	"github.com/mushroomdb/bucketlease/internal/testsupport/leakcheck"
)

// TestCloseLeaksNothing (Close): opening a gs:// bucket, using it and
// closing it 1,000 times leaves no goroutine behind. The negative control
// shows that the test can see a leak: 50 buckets opened and used but not
// closed keep at least 50 more goroutines (each client's idle connection),
// which closing them releases.
func TestCloseLeaksNothing(t *testing.T) {
	endpoint := emulator(t)
	leakcheck.OpenClose(t, "gs://"+newBucket(t, endpoint)+"/db1?endpoint="+endpoint, "db1/LEASE", 1000)
}

// TestCloseLeavesCallersClient: a Bucket from New does not close the
// client its caller passed in, and Close twice is harmless.
func TestCloseLeavesCallersClient(t *testing.T) {
	endpoint := emulator(t)
	c := client(t, endpoint, nil)
	name := newBucket(t, endpoint)
	b := gcs.New(c, name)
	if err := location.Close(b); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := gcs.New(c, name).Put(t.Context(), "k", []byte("x"), driver.PutOptions{If: driver.IfAbsent()}); err != nil {
		t.Fatalf("the caller's client after the Bucket's Close: %v", err)
	}
	opened, _, err := location.Open(t.Context(), "gs://"+name+"?endpoint="+endpoint)
	if err != nil {
		t.Fatal(err)
	}
	if err := location.Close(opened); err != nil {
		t.Fatal(err)
	}
	if err := location.Close(opened); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestOpenURLCredentials: a bucket opened by URL without an http://
// endpoint builds its own transport (so that Close can close it) with
// Application Default Credentials, as the client library would: here a
// service account whose token endpoint, on loopback, refuses it, so the
// request never leaves the machine. The refusal is ErrPermission with the
// auth library's error in the chain, as for a client built by the library.
func TestOpenURLCredentials(t *testing.T) {
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
	file := filepath.Join(t.TempDir(), "sa.json")
	if err := os.WriteFile(file, sa, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", file)
	t.Setenv("STORAGE_EMULATOR_HOST", "")
	for _, url := range []string{"gs://bkt/p", "gs://bkt/p?endpoint=https://127.0.0.1:1"} {
		b, _, err := location.Open(t.Context(), url)
		if err != nil {
			t.Fatal(err)
		}
		var ae *auth.Error
		if _, _, err := b.Get(t.Context(), "p/LEASE", driver.GetOptions{}); !errors.Is(err, driver.ErrPermission) || !errors.As(err, &ae) {
			t.Errorf("%s: Get with refused credentials: %v, want ErrPermission with *auth.Error", url, err)
		}
		if err := location.Close(b); err != nil {
			t.Error(err)
		}
	}
}

// TestOpenURLEmulatorHost: without the endpoint parameter, the client
// library's STORAGE_EMULATOR_HOST still sends every request to the
// emulator, without credentials, on the transport the Bucket owns.
func TestOpenURLEmulatorHost(t *testing.T) {
	endpoint := emulator(t)
	name := newBucket(t, endpoint)
	t.Setenv("STORAGE_EMULATOR_HOST", endpoint)
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", filepath.Join(t.TempDir(), "none.json"))
	b, prefix, err := location.Open(t.Context(), "gs://"+name+"/db1")
	if err != nil {
		t.Fatal(err)
	}
	defer location.Close(b)
	v, err := b.Put(t.Context(), prefix+"/LEASE", []byte("x"), driver.PutOptions{If: driver.IfAbsent()})
	if err != nil {
		t.Fatalf("Put through STORAGE_EMULATOR_HOST: %v", err)
	}
	if _, gv, err := b.Get(t.Context(), prefix+"/LEASE", driver.GetOptions{}); err != nil || gv.Version != v.Version {
		t.Fatalf("Get through STORAGE_EMULATOR_HOST: %s, %v; want %s", gv.Version, err, v.Version)
	}
}
