// Package testenv tells tests which outside services they may use.
//
// Emulators (MinIO, Azurite, fake-gcs-server) are started by scripts/test,
// which exports their addresses and sets BUCKETLEASE_REQUIRE_EMULATORS=1: a
// test that needs one then fails if its variables are missing, instead of
// passing by skipping. A plain `go test ./...` without the emulators skips
// those tests and says so. Real clouds are never required: their tests run
// only when their variables are set, and print that they were skipped
// otherwise.
package testenv

import (
	"os"
	"strings"
	"testing"
)

// Emulator returns the values of vars, which scripts/test exports for the
// named emulator. If any is unset, the test fails when the emulators are
// required and is skipped otherwise.
func Emulator(t testing.TB, name string, vars ...string) map[string]string {
	t.Helper()
	vals, missing := lookup(vars)
	if len(missing) > 0 {
		msg := name + " is not running: " + strings.Join(missing, ", ") + " unset; scripts/test starts it"
		if os.Getenv("BUCKETLEASE_REQUIRE_EMULATORS") == "1" {
			t.Fatal(msg)
		}
		t.Skip("skipped: " + msg)
	}
	return vals
}

// Cloud returns the values of vars, which name a real cloud bucket for this
// test, or skips the test, saying which variables would enable it.
func Cloud(t testing.TB, service string, vars ...string) map[string]string {
	t.Helper()
	vals, missing := lookup(vars)
	if len(missing) > 0 {
		t.Skip("skipped: real " + service + " test; set " + strings.Join(missing, ", ") + " to run it")
	}
	return vals
}

func lookup(vars []string) (map[string]string, []string) {
	vals := make(map[string]string, len(vars))
	var missing []string
	for _, v := range vars {
		val := os.Getenv(v)
		if val == "" {
			missing = append(missing, v)
		}
		vals[v] = val
	}
	return vals, missing
}

// IsolateAWS keeps the developer's AWS files and variables out of a test
// that loads the AWS SDK's default configuration: credentials, region,
// profile and endpoint all start empty, and the test sets what it needs.
// The EC2 instance metadata service is disabled, so that a test without
// credentials never reaches past loopback for them.
func IsolateAWS(t testing.TB) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", dir+"/config")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", dir+"/credentials")
	for _, v := range []string{"AWS_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID",
		"AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"} {
		t.Setenv(v, "")
	}
}
