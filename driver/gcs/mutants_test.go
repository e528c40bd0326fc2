package gcs_test

// Tests that kill mutants of the error classification which the other
// tests catch only against fake-gcs-server (scripts/mutate runs without
// emulators): a loopback server answers as Cloud Storage does.

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/internal/location"
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
	b, _, err := location.Open(ctx, "gs://bkt/p?endpoint="+notFoundService(t, true))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Get(ctx, "p/LEASE", driver.GetOptions{}); !errors.Is(err, driver.ErrNotExist) || errors.Is(err, driver.ErrBucketNotExist) {
		t.Errorf("Get of a missing object: %v, want ErrNotExist", err)
	}
	if _, err := b.Put(ctx, "p/LEASE", []byte("x"), driver.PutOptions{If: driver.IfMatch("1700000000000001")}); !errors.Is(err, driver.ErrPrecondition) || errors.Is(err, driver.ErrNotExist) {
		t.Errorf("Put IfMatch of a missing object: %v, want ErrPrecondition and not ErrNotExist", err)
	}

	missing, _, err := location.Open(ctx, "gs://bkt/p?endpoint="+notFoundService(t, false))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := missing.Get(ctx, "p/LEASE", driver.GetOptions{}); !errors.Is(err, driver.ErrBucketNotExist) || errors.Is(err, driver.ErrNotExist) {
		t.Errorf("Get in a missing bucket: %v, want ErrBucketNotExist and not ErrNotExist", err)
	}
	if _, err := missing.Put(ctx, "p/LEASE", []byte("x"), driver.PutOptions{If: driver.IfMatch("1700000000000001")}); !errors.Is(err, driver.ErrBucketNotExist) {
		t.Errorf("Put IfMatch in a missing bucket: %v, want ErrBucketNotExist", err)
	}
}

// refusingService answers a bucket lookup with the bucket and every other
// request with status and a Cloud Storage error of reason, its Date header
// set to date.
func refusingService(t *testing.T, status int, reason string, date time.Time) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Date", date.Format(http.TimeFormat))
		if r.Method == http.MethodGet && strings.TrimSuffix(r.URL.Path, "/") == "/storage/v1/b/bkt" {
			_, _ = w.Write([]byte(`{"kind":"storage#bucket","id":"bkt","name":"bkt"}`))
			return
		}
		w.WriteHeader(status)
		_, _ = fmt.Fprintf(w, `{"error":{"code":%d,"message":"refused","errors":[{"reason":%q,"message":"refused"}]}}`, status, reason)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestServiceTimeWithARefusal: a Get of a missing object (404) and a Put
// whose condition the service refused (404 under IfMatch, 412) return the
// Date of the service's answer in Attrs.Time with their error, as a bucket
// opened by URL reads it (ServiceTimeTransport); and no version.
func TestServiceTimeWithARefusal(t *testing.T) {
	ctx := t.Context()
	date := time.Date(2026, 12, 7, 20, 0, 0, 0, time.UTC)
	b, _, err := location.Open(ctx, "gs://bkt/p?endpoint="+refusingService(t, http.StatusNotFound, "notFound", date))
	if err != nil {
		t.Fatal(err)
	}
	_, a, err := b.Get(ctx, "p/LEASE", driver.GetOptions{})
	if !errors.Is(err, driver.ErrNotExist) || !a.Time.Date.Equal(date) || a.Version != "" {
		t.Errorf("Get of a missing object: %+v, %v; want ErrNotExist with the service's Date %v", a, err, date)
	}
	a, err = b.Put(ctx, "p/LEASE", []byte("x"), driver.PutOptions{If: driver.IfMatch("1700000000000001")})
	if !errors.Is(err, driver.ErrPrecondition) || !a.Time.Date.Equal(date) || a.Version != "" {
		t.Errorf("Put IfMatch of a missing object: %+v, %v; want ErrPrecondition with the service's Date %v", a, err, date)
	}
	b, _, err = location.Open(ctx, "gs://bkt/p?endpoint="+refusingService(t, http.StatusPreconditionFailed, "conditionNotMet", date))
	if err != nil {
		t.Fatal(err)
	}
	a, err = b.Put(ctx, "p/LEASE", []byte("x"), driver.PutOptions{If: driver.IfAbsent()})
	if !errors.Is(err, driver.ErrPrecondition) || !a.Time.Date.Equal(date) || a.Time.Resolution != time.Second {
		t.Errorf("Put IfAbsent refused with 412: %+v, %v; want ErrPrecondition with the service's Date %v to the second", a, err, date)
	}
}
