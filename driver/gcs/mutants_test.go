package gcs_test

// Tests that kill mutants of the error classification which the other
// tests catch only against fake-gcs-server (scripts/mutate runs without
// emulators): a loopback server answers as Cloud Storage does.

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mushroomdb/bucketlease/driver"
)

// notFoundService answers a bucket lookup (GET /storage/v1/b/bkt) with the
// bucket if bucketExists, and every other request with 404 notFound, as
// Cloud Storage does for a missing object (or, without the bucket, for
// anything in it).
func notFoundService(t *testing.T, bucketExists bool) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if bucketExists && r.Method == http.MethodGet && strings.TrimSuffix(r.URL.Path, "/") == "/storage/v1/b/bkt" {
			_, _ = w.Write([]byte(`{"kind":"storage#bucket","id":"bkt","name":"bkt"}`))
			return
		}
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":{"code":404,"message":"Not Found","errors":[{"reason":"notFound","message":"Not Found"}]}}`))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestNotFoundClassesWithoutEmulator: in a bucket that exists, a missing
// object is ErrNotExist on a Get and a refused condition (ErrPrecondition)
// under IfMatch, never ErrNotExist there (the renewal would read a missing
// key as a removed lease rather than a refusal); in a bucket that does not
// exist, the same 404 is ErrBucketNotExist and never ErrNotExist, so an
// empty prefix is not assumed. (Mutants gcs-missing-under-if-match and
// gcs-no-bucket-lookup.)
func TestNotFoundClassesWithoutEmulator(t *testing.T) {
	ctx := t.Context()
	b, _, err := driver.Open(ctx, "gs://bkt/p?endpoint="+notFoundService(t, true))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Get(ctx, "p/LEASE"); !errors.Is(err, driver.ErrNotExist) || errors.Is(err, driver.ErrBucketNotExist) {
		t.Errorf("Get of a missing object: %v, want ErrNotExist", err)
	}
	if _, err := b.Put(ctx, "p/LEASE", []byte("x"), driver.IfMatch("1700000000000001")); !errors.Is(err, driver.ErrPrecondition) || errors.Is(err, driver.ErrNotExist) {
		t.Errorf("Put IfMatch of a missing object: %v, want ErrPrecondition and not ErrNotExist", err)
	}

	missing, _, err := driver.Open(ctx, "gs://bkt/p?endpoint="+notFoundService(t, false))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := missing.Get(ctx, "p/LEASE"); !errors.Is(err, driver.ErrBucketNotExist) || errors.Is(err, driver.ErrNotExist) {
		t.Errorf("Get in a missing bucket: %v, want ErrBucketNotExist and not ErrNotExist", err)
	}
	if _, err := missing.Put(ctx, "p/LEASE", []byte("x"), driver.IfMatch("1700000000000001")); !errors.Is(err, driver.ErrBucketNotExist) {
		t.Errorf("Put IfMatch in a missing bucket: %v, want ErrBucketNotExist", err)
	}
}
