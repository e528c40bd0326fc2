package wirefault_test

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"

	"cloud.google.com/go/storage"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"google.golang.org/api/option"

	"github.com/mushroomdb/bucketlease/driver/azure"
	"github.com/mushroomdb/bucketlease/driver/gcs"
	"github.com/mushroomdb/bucketlease/internal/testenv"
	"github.com/mushroomdb/bucketlease/internal/wirefault"
)

func randomName() string {
	var b [6]byte
	rand.Read(b[:])
	return "bucketlease-" + hex.EncodeToString(b[:])
}

// TestGCSLostReplies: Cloud Storage carries preconditions in the query
// (ifGenerationMatch) of a multipart upload, and the Go client does not
// retry a single-request upload, so the dropped reply reaches the lease as
// an error and the lease reads its record back.
func TestGCSLostReplies(t *testing.T) {
	const v = "BUCKETLEASE_TEST_GCS_ENDPOINT"
	endpoint := testenv.Emulator(t, "fake-gcs-server", v)[v]
	tr := &wirefault.Transport{}
	client, err := storage.NewClient(t.Context(), option.WithEndpoint(endpoint+"/storage/v1/"),
		option.WithHTTPClient(&http.Client{Transport: tr}))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	name := randomName()
	if err := client.Bucket(name).Create(t.Context(), "bucketlease-test", nil); err != nil {
		t.Fatal(err)
	}
	gcsUpload := func(wantAbsent bool) func(*http.Request) bool {
		return func(r *http.Request) bool {
			g := r.URL.Query().Get("ifGenerationMatch")
			return r.Method == http.MethodPost && strings.Contains(r.URL.Path, "/upload/") && g != "" && (g == "0") == wantAbsent
		}
	}
	lostReplyScenariosWith(t, gcs.New(client, name), tr, gcsUpload(true), gcsUpload(false))
}

// TestAzureLostReplies: the Azure SDK retries a conditional Put Blob whose
// reply was lost; the retry is refused (409 or 412) because the first
// attempt landed, and the lease must recognise its own record.
func TestAzureLostReplies(t *testing.T) {
	const v = "BUCKETLEASE_TEST_AZURITE_CONNECTION_STRING"
	cs := testenv.Emulator(t, "Azurite", v)[v]
	tr := &wirefault.Transport{}
	c, err := container.NewClientFromConnectionString(cs, randomName(), &container.ClientOptions{
		ClientOptions: azcore.ClientOptions{
			Transport: &http.Client{Transport: tr},
			Retry:     policy.RetryOptions{MaxRetries: 2, RetryDelay: 1, MaxRetryDelay: 10},
		},
	})
	if err != nil {
		t.Fatal("the emulator's connection string does not parse")
	}
	if _, err := c.Create(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	lostReplyScenariosWith(t, azure.New(c), tr,
		wirefault.ConditionalPut("If-None-Match", "/db1/LEASE"), wirefault.ConditionalPut("If-Match", "/db1/LEASE"))
}
