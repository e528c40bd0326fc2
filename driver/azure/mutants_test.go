package azure_test

// Tests that kill mutants of the error classification which the other
// tests catch only against Azurite (scripts/mutate runs without
// emulators): a loopback server answers as Blob Storage does.

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/azure"
)

// notFoundBucket returns the driver on a loopback service that answers
// every request 404 with the error code code (BlobNotFound,
// ContainerNotFound), as Blob Storage does.
func notFoundBucket(t *testing.T, code string) driver.Bucket {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("x-ms-error-code", code)
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`<?xml version="1.0" encoding="utf-8"?><Error><Code>` + code + `</Code><Message>not found</Message></Error>`))
	}))
	t.Cleanup(srv.Close)
	c, err := container.NewClientWithNoCredential(srv.URL+"/devstoreaccount1/cont", &container.ClientOptions{
		ClientOptions: azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: 1, RetryDelay: 1, MaxRetryDelay: 10}}})
	if err != nil {
		t.Fatal(err)
	}
	return azure.New(c)
}

// TestNotFoundClassesWithoutEmulator: BlobNotFound is ErrNotExist on a Get
// and a refused condition (ErrPrecondition) under IfMatch, never ErrNotExist
// there; ContainerNotFound is ErrBucketNotExist and never ErrNotExist, so an
// empty prefix is not assumed. (Mutants azure-missing-under-if-match and
// azure-container-missing-is-key-missing.)
func TestNotFoundClassesWithoutEmulator(t *testing.T) {
	ctx := t.Context()
	b := notFoundBucket(t, "BlobNotFound")
	if _, _, err := b.Get(ctx, "db1/LEASE", driver.GetOptions{}); !errors.Is(err, driver.ErrNotExist) || errors.Is(err, driver.ErrBucketNotExist) {
		t.Errorf("Get answered BlobNotFound: %v, want ErrNotExist", err)
	}
	if _, err := b.Put(ctx, "db1/LEASE", []byte("x"), driver.PutOptions{If: driver.IfMatch(`"0x8DCBA9F00FF1234"`)}); !errors.Is(err, driver.ErrPrecondition) || errors.Is(err, driver.ErrNotExist) {
		t.Errorf("Put IfMatch answered BlobNotFound: %v, want ErrPrecondition and not ErrNotExist", err)
	}

	missing := notFoundBucket(t, "ContainerNotFound")
	if _, _, err := missing.Get(ctx, "db1/LEASE", driver.GetOptions{}); !errors.Is(err, driver.ErrBucketNotExist) || errors.Is(err, driver.ErrNotExist) {
		t.Errorf("Get answered ContainerNotFound: %v, want ErrBucketNotExist and not ErrNotExist", err)
	}
	if _, err := missing.Put(ctx, "db1/LEASE", []byte("x"), driver.PutOptions{If: driver.IfAbsent()}); !errors.Is(err, driver.ErrBucketNotExist) {
		t.Errorf("Put answered ContainerNotFound: %v, want ErrBucketNotExist", err)
	}
}
