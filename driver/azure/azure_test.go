package azure_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/azure"
	"github.com/mushroomdb/bucketlease/drivertest"
	"github.com/mushroomdb/bucketlease/internal/location"
	"github.com/mushroomdb/bucketlease/internal/objects"
	"github.com/mushroomdb/bucketlease/internal/testsupport/testenv"
)

// emulatorDeviations are the drivertest checks Azurite is known to fail
// where Azure Blob Storage passes. This is the only list of them; drivertest
// fails the run if one of them starts passing. Azurite enforces
// If-None-Match: * and If-Match on Put Blob and If-Match on Delete Blob as
// the service does, so there are none.
var emulatorDeviations = map[string]string{}

// emulator returns Azurite's connection string, exported by scripts/test.
func emulator(t *testing.T) string {
	t.Helper()
	const v = "BUCKETLEASE_TEST_AZURITE_CONNECTION_STRING"
	return testenv.Emulator(t, "Azurite", v, "BUCKETLEASE_TEST_AZURITE_ENDPOINT")[v]
}

// newContainer creates a fresh container on Azurite and returns its name.
func newContainer(t *testing.T, connString string) string {
	t.Helper()
	var b [6]byte
	rand.Read(b[:])
	name := "bucketlease-" + hex.EncodeToString(b[:])
	c, err := container.NewClientFromConnectionString(connString, name, nil)
	if err != nil {
		t.Fatal("the emulator's connection string does not parse")
	}
	if _, err := c.Create(t.Context(), nil); err != nil {
		t.Fatalf("create container %s: %v", name, err)
	}
	return name
}

// TestEmulatorConformance opens the driver by URL with the connection string
// in the environment, as a user would, and runs the whole conformance suite
// against Azurite.
func TestEmulatorConformance(t *testing.T) {
	cs := emulator(t)
	t.Setenv(azure.EnvConnectionString, cs)
	name := newContainer(t, cs)
	u := "azblob://" + name + "/ci/run"
	b, prefix, err := location.Open(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	if prefix != "ci/run" {
		t.Fatalf("prefix = %q", prefix)
	}
	drivertest.Run(t, b, drivertest.Options{Prefix: prefix, KnownDeviations: emulatorDeviations, URL: u,
		Pending: uncommittedBlocks(containerClient(t, cs, name, nil))})
}

// TestEmulatorErrors checks both refusal statuses on the wire, the error
// chain (errors.Is for the kind, errors.As for the SDK's error) and that
// messages are one line naming the key, with no credential in them.
func TestEmulatorErrors(t *testing.T) {
	cs := emulator(t)
	c, err := container.NewClientFromConnectionString(cs, newContainer(t, cs), nil)
	if err != nil {
		t.Fatal("the emulator's connection string does not parse")
	}
	b := azure.New(c)
	ctx := t.Context()
	put, err := b.Put(ctx, "dir/k", []byte("one"), driver.PutOptions{If: driver.IfAbsent()})
	v := put.Version
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(v), `"`) {
		t.Errorf("version %s is not the quoted ETag", v)
	}
	var re *azcore.ResponseError
	_, err = b.Put(ctx, "dir/k", []byte("two"), driver.PutOptions{If: driver.IfAbsent()})
	if !errors.Is(err, driver.ErrPrecondition) || !errors.As(err, &re) || re.StatusCode != http.StatusConflict || re.ErrorCode != "BlobAlreadyExists" {
		t.Fatalf("IfAbsent on an existing blob: %v; want ErrPrecondition from 409 BlobAlreadyExists", err)
	}
	_, err = b.Put(ctx, "dir/k", []byte("two"), driver.PutOptions{If: driver.IfMatch(objects.FakeVersion(v))})
	if !errors.Is(err, driver.ErrPrecondition) || !errors.As(err, &re) || re.StatusCode != http.StatusPreconditionFailed {
		t.Fatalf("IfMatch(made-up): %v; want ErrPrecondition from 412", err)
	}
	_, err = b.Put(ctx, "dir/missing", []byte("two"), driver.PutOptions{If: driver.IfMatch(v)})
	if !errors.Is(err, driver.ErrPrecondition) || !errors.As(err, &re) || re.ErrorCode != "ConditionNotMet" {
		t.Fatalf("IfMatch on a missing blob: %v; want ErrPrecondition from 412 ConditionNotMet", err)
	}
	msg := err.Error()
	if want := `azure: put dir/missing (If-Match: ` + "\"\\\""; !strings.HasPrefix(msg, want) || strings.Contains(msg, "\n") {
		t.Errorf("message %q: want one line starting %q", msg, want)
	}
	if strings.Contains(msg, "AccountKey") || strings.Contains(msg, cs[strings.Index(cs, "AccountKey=")+11:][:12]) {
		t.Errorf("the message shows a credential")
	}
	if _, _, err := b.Get(ctx, "dir/nope", driver.GetOptions{}); !errors.Is(err, driver.ErrNotExist) || !errors.As(err, &re) {
		t.Fatalf("Get of a missing blob: %v", err)
	}
	// A missing container is an error, not a missing blob.
	other, err := container.NewClientFromConnectionString(cs, "no-such-container", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := azure.New(other).Get(ctx, "k", driver.GetOptions{}); err == nil || errors.Is(err, driver.ErrNotExist) {
		t.Errorf("Get in a missing container: %v; want an error other than ErrNotExist", err)
	}
}

// TestOpenURL covers the URL's parameters and the credential sources, without
// a server: opening sends no request.
func TestOpenURL(t *testing.T) {
	const secret = "aHVudGVyMmh1bnRlcjJodW50ZXIy"
	ctx := context.Background()
	t.Setenv(azure.EnvConnectionString, "")
	t.Setenv(azure.EnvAccount, "")

	_, prefix, err := location.Open(ctx, "azblob://cnt/backups/db1/?account=myaccount")
	if err != nil || prefix != "backups/db1" {
		t.Fatalf("Open = %q, %v", prefix, err)
	}
	drivertest.RunURLs(t, drivertest.URLCases{Secrets: []string{secret}, Invalid: map[string]string{
		"azblob://cnt/p?acount=a":                              `unknown query parameter "acount"`,
		"azblob://cnt/p?sig=" + secret:                         `unknown query parameter "sig"`,
		"azblob:///p?account=a":                                "names no container",
		"azblob://cnt/p":                                       "no storage account",
		"azblob://cnt/p?account=Not_An_Account":                "not a storage account name",
		"azblob://cnt/p?endpoint=127.0.0.1:10000":              "endpoint parameter must be",
		"azblob://cnt/p?endpoint=http://h/a?sv=1":              "endpoint parameter must be",
		"azblob://cnt/p?endpoint=http://h/a&account=a":         "either the account or the endpoint",
		"azblob://a:" + secret + "@c/p?account=a":              "carry no credentials",
		"azblob://cnt/p?account=a&endpoint=http://x&account=b": "given 2 times",
		// The bucket (container) name must follow the service's naming rule.
		"azblob://c:1/p?account=a":      "container name",
		"azblob://Cont_Bad/p?account=a": "container name",
		"azblob://a--b/p?account=a":     "two hyphens",
		"azblob://c/p?account=a":        "3 to 63",
		// A SAS URL pasted as the endpoint is refused.
		"azblob://cnt/p?endpoint=" + url.QueryEscape("https://a.blob.core.windows.net/?sv=2022-11-02&sig="+secret):                  "endpoint parameter must be",
		"azblob://cnt/p?endpoint=" + url.QueryEscape(url.QueryEscape("https://a.blob.core.windows.net/?sv=2022-11-02&sig="+secret)): "endpoint parameter must be",
	}})

	t.Setenv(azure.EnvAccount, "fromenv")
	if _, _, err := location.Open(ctx, "azblob://cnt/p"); err != nil {
		t.Errorf("the account from %s was not used: %v", azure.EnvAccount, err)
	}

	// With a connection string in the environment.
	t.Setenv(azure.EnvConnectionString, "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey="+secret+";EndpointSuffix=core.windows.net")
	if _, _, err := location.Open(ctx, "azblob://cnt/p"); err != nil {
		t.Errorf("Open with a connection string: %v", err)
	}
	if _, _, err := location.Open(ctx, "azblob://cnt/p?account=acct"); err != nil {
		t.Errorf("Open with a connection string for the same account: %v", err)
	}
	for raw, want := range map[string]string{
		"azblob://cnt/p?account=other":            `names account "other" but AZURE_STORAGE_CONNECTION_STRING is for account "acct"`,
		"azblob://cnt/p?endpoint=http://h:1/acct": "cannot be used while AZURE_STORAGE_CONNECTION_STRING is set",
	} {
		if _, _, err := location.Open(ctx, raw); err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), secret) {
			t.Errorf("Open(%q) = %v, want an error containing %q and no key", raw, err, want)
		}
	}
	for _, bad := range []string{"AccountName=acct;AccountKey=" + secret + ";junk", "AccountKey=" + secret, secret} {
		t.Setenv(azure.EnvConnectionString, bad)
		_, _, err := location.Open(ctx, "azblob://cnt/p")
		if err == nil || !strings.Contains(err.Error(), "not a valid connection string") {
			t.Errorf("a malformed connection string gave %v", err)
		} else if strings.Contains(err.Error(), secret) {
			t.Errorf("the error shows the connection string's key: %v", err)
		}
	}
}

// TestCloud runs the suite against a real Azure container, with no deviation
// allowed. BUCKETLEASE_TEST_AZURE_URL is an azblob:// URL; credentials come
// from AZURE_STORAGE_CONNECTION_STRING or the default Azure credential chain.
func TestCloud(t *testing.T) {
	raw := testenv.Cloud(t, "Azure Blob Storage", "BUCKETLEASE_TEST_AZURE_URL")["BUCKETLEASE_TEST_AZURE_URL"]
	b, prefix, err := location.Open(t.Context(), raw)
	if err != nil {
		t.Fatal(err)
	}
	drivertest.Run(t, b, drivertest.Options{Prefix: prefix + "/drivertest", URL: raw})
}
