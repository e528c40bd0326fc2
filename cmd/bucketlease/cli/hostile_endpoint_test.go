//go:build unix

package cli

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestHostileEndpointNeverReachesTheTerminal: the text of a service's
// error, which an endpoint chooses, reaches the command's error line
// escaped: a bidi override in it does not turn the operator's line around.
func TestHostileEndpointNeverReachesTheTerminal(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>InvalidRequest</Code><Message>x\u202etxt.exe</Message><RequestId>1</RequestId></Error>"))
	}))
	defer srv.Close()
	env := []string{"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_SESSION_TOKEN=", "AWS_PROFILE=", "AWS_REGION=us-east-1",
		"AWS_EC2_METADATA_DISABLED=true", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_ENDPOINT_URL=", "AWS_ENDPOINT_URL_S3="}
	_, stderr, code := runCLI(t, env, "show", s3URL(srv.URL, "bucket", "db"), "--timeout", "20s")
	if code == 0 {
		t.Fatalf("show on an endpoint that answers every request 400: exit 0\n%s", stderr)
	}
	if strings.Contains(stderr, "\u202e") {
		t.Fatalf("the error line printed the service's text raw:\n%q", stderr)
	}
	if !strings.Contains(stderr, `x\u202etxt.exe`) {
		t.Fatalf("the error line does not carry the service's words, escaped:\n%s", stderr)
	}
}
