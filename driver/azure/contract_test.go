package azure_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	azlease "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/lease"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/azure"
	"github.com/mushroomdb/bucketlease/drivertest"
	"github.com/mushroomdb/bucketlease/drivertest/wirefault"
)

// containerClient returns a client for container name on Azurite through
// rt (nil: the default transport), with quick retries.
func containerClient(t *testing.T, cs, name string, rt http.RoundTripper) *container.Client {
	t.Helper()
	o := &container.ClientOptions{ClientOptions: azcore.ClientOptions{
		Retry: policy.RetryOptions{MaxRetries: 2, RetryDelay: 1, MaxRetryDelay: 10}}}
	if rt != nil {
		o.Transport = &http.Client{Transport: rt}
	}
	c, err := container.NewClientFromConnectionString(cs, name, o)
	if err != nil {
		t.Fatal("the emulator's connection string does not parse")
	}
	return c
}

// TestConformanceWithFaults runs the suite with a missing container and a
// Transport hook (for the wire checks) against Azurite.
func TestConformanceWithFaults(t *testing.T) {
	cs := emulator(t)
	name := newContainer(t, cs)
	wrongCS := regexp.MustCompile(`AccountKey=[^;]*`).ReplaceAllString(cs, "AccountKey=d3Jvbmd3cm9uZ3dyb25nd3Jvbmd3cm9uZ3dyb25nd3Jvbmc=")
	cc := containerClient(t, cs, name, nil)
	drivertest.Run(t, azure.New(cc), drivertest.Options{
		KnownDeviations:  emulatorDeviations,
		Pending:          uncommittedBlocks(cc),
		WrongCredentials: azure.New(containerClient(t, wrongCS, name, nil)),
		MissingBucket:    azure.New(containerClient(t, cs, "bucketlease-no-such-container", nil)),
		Transport: func(rt http.RoundTripper) (driver.Bucket, error) {
			return azure.New(containerClient(t, cs, name, rt)), nil
		},
	})
}

// TestBlobLeaseIsNotAPrecondition: a blob with an Azure blob
// lease on it answers 412 LeaseIdMissing to a Put with If-Match of its
// current ETag. The condition held; the refusal is something else, and
// must not read as ErrPrecondition.
func TestBlobLeaseIsNotAPrecondition(t *testing.T) {
	cs := emulator(t)
	c := containerClient(t, cs, newContainer(t, cs), nil)
	b := azure.New(c)
	ctx := t.Context()
	put, err := b.Put(ctx, "db1/LEASE", []byte("one"), driver.PutOptions{If: driver.IfAbsent()})
	v := put.Version
	if err != nil {
		t.Fatal(err)
	}
	bc := c.NewBlobClient("db1/LEASE")
	lc, err := azlease.NewBlobClient(bc, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lc.AcquireLease(ctx, -1, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = lc.ReleaseLease(t.Context(), nil) })
	_, err = b.Put(ctx, "db1/LEASE", []byte("two"), driver.PutOptions{If: driver.IfMatch(v)})
	var re *azcore.ResponseError
	if err == nil || errors.Is(err, driver.ErrPrecondition) || !errors.As(err, &re) || re.ErrorCode != "LeaseIdMissing" {
		t.Fatalf("Put IfMatch(current) on a leased blob: %v; want an error that is not ErrPrecondition, from 412 LeaseIdMissing", err)
	}
	if !strings.Contains(err.Error(), "Azure blob lease") {
		t.Errorf("the error %q does not explain the blob lease", err)
	}
}

// TestErrorClasses: a missing container is
// ErrBucketNotExist on every operation; a wrong account key is
// ErrPermission.
func TestErrorClasses(t *testing.T) {
	cs := emulator(t)
	ctx := t.Context()
	missing := azure.New(containerClient(t, cs, "bucketlease-no-such-container", nil))
	if _, _, err := missing.Get(ctx, "db1/LEASE", driver.GetOptions{}); !errors.Is(err, driver.ErrBucketNotExist) || errors.Is(err, driver.ErrNotExist) {
		t.Errorf("Get in a missing container: %v, want ErrBucketNotExist", err)
	}
	if _, err := missing.Put(ctx, "db1/LEASE", []byte("x"), driver.PutOptions{If: driver.IfMatch(`"0x8DCBA9F00FF1234"`)}); !errors.Is(err, driver.ErrBucketNotExist) {
		t.Errorf("Put IfMatch in a missing container: %v, want ErrBucketNotExist", err)
	}
	if err := missing.Delete(ctx, "db1/LEASE", driver.Condition{}); !errors.Is(err, driver.ErrBucketNotExist) {
		t.Errorf("Delete in a missing container: %v, want ErrBucketNotExist", err)
	}
	// The same account with another key (a valid base64 one).
	wrongCS := regexp.MustCompile(`AccountKey=[^;]*`).ReplaceAllString(cs, "AccountKey=d3Jvbmd3cm9uZ3dyb25nd3Jvbmd3cm9uZ3dyb25nd3Jvbmc=")
	wrong := azure.New(containerClient(t, wrongCS, newContainer(t, cs), nil))
	if _, _, err := wrong.Get(ctx, "k", driver.GetOptions{}); !errors.Is(err, driver.ErrPermission) {
		t.Errorf("Get with a wrong account key: %v, want ErrPermission", err)
	}
	if _, err := wrong.Put(ctx, "k", []byte("x"), driver.PutOptions{If: driver.IfAbsent()}); !errors.Is(err, driver.ErrPermission) {
		t.Errorf("Put with a wrong account key: %v, want ErrPermission", err)
	}
	if err := wrong.Delete(ctx, "k", driver.Condition{}); !errors.Is(err, driver.ErrPermission) {
		t.Errorf("Delete with a wrong account key: %v, want ErrPermission", err)
	}
}

// TestAliasingKeysRefused: Azurite stores "bs\k" as "bs/k"; the driver
// refuses a backslash (driver.CheckKey) and a segment ending in a dot.
func TestAliasingKeysRefused(t *testing.T) {
	cs := emulator(t)
	c := containerClient(t, cs, newContainer(t, cs), nil)
	ctx := t.Context()
	if _, err := c.NewBlockBlobClient(`bs\k`).UploadBuffer(ctx, []byte("x"), nil); err == nil {
		if _, err := c.NewBlobClient("bs/k").GetProperties(ctx, nil); err == nil {
			t.Logf(`Azurite stored bs\k as bs/k`)
		}
	}
	b := azure.New(c)
	for _, k := range []string{`bs\k`, "a./b", "a/b.", "/a", "a//b"} {
		if _, err := b.Put(ctx, k, []byte("x"), driver.PutOptions{If: driver.IfAbsent()}); !errors.Is(err, driver.ErrInvalidKey) {
			t.Errorf("Put %q: %v, want ErrInvalidKey", k, err)
		}
	}
}

// TestRetriedWriteThatLanded: the Azure SDK retries a Put Blob
// whose reply was lost, and the retry is refused (409 or 412) because the
// first attempt landed: ErrOutcomeUnknown, never ErrPrecondition.
func TestRetriedWriteThatLanded(t *testing.T) {
	cs := emulator(t)
	tr := &wirefault.Transport{}
	b := azure.New(containerClient(t, cs, newContainer(t, cs), tr))
	ctx := t.Context()
	put, err := b.Put(ctx, "k", []byte("one"), driver.PutOptions{If: driver.IfAbsent()})
	v := put.Version
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		key  string
		cond driver.Condition
		hdr  string
	}{{"k", driver.IfMatch(v), "If-Match"}, {"new", driver.IfAbsent(), "If-None-Match"}} {
		tr.Drop = wirefault.Once(wirefault.ConditionalPut(c.hdr, "/"+c.key))
		_, err := b.Put(ctx, c.key, []byte("two"), driver.PutOptions{If: c.cond})
		if errors.Is(err, driver.ErrPrecondition) || !errors.Is(err, driver.ErrOutcomeUnknown) {
			t.Errorf("Put (%s) whose first attempt landed: %v; want ErrOutcomeUnknown", c.cond, err)
		}
	}
	if tr.Dropped() != 2 {
		t.Fatalf("%d replies dropped", tr.Dropped())
	}
}

// TestTokenRefused: an Azure AD credential whose token request
// is refused (a loopback identity endpoint answering 401) is ErrPermission,
// with azidentity's error in the chain.
func TestTokenRefused(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":"invalid_client","error_description":"AADSTS7000215: Invalid client secret provided.","error_codes":[7000215]}`))
	}))
	defer srv.Close()
	opts := azcore.ClientOptions{Transport: srv.Client(), Retry: policy.RetryOptions{MaxRetries: -1},
		Cloud: cloud.Configuration{ActiveDirectoryAuthorityHost: srv.URL + "/"}}
	cred, err := azidentity.NewClientSecretCredential("00000000-0000-0000-0000-000000000000", "11111111-1111-1111-1111-111111111111",
		"wrong-secret", &azidentity.ClientSecretCredentialOptions{ClientOptions: opts, DisableInstanceDiscovery: true})
	if err != nil {
		t.Fatal(err)
	}
	c, err := container.NewClient(srv.URL+"/acct/cnt", cred, &container.ClientOptions{ClientOptions: opts})
	if err != nil {
		t.Fatal(err)
	}
	var afe *azidentity.AuthenticationFailedError
	if _, _, err := azure.New(c).Get(t.Context(), "k", driver.GetOptions{}); !errors.Is(err, driver.ErrPermission) || !errors.As(err, &afe) {
		t.Fatalf("Get with a refused credential: %v, want ErrPermission with *azidentity.AuthenticationFailedError", err)
	}
}
