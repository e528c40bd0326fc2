package compat

import (
	"os"
	"strings"
	"testing"

	"github.com/mushroomdb/bucketlease/drivertest"
	"github.com/mushroomdb/bucketlease/internal/location"
	"github.com/mushroomdb/bucketlease/internal/testsupport/testenv"
)

// The variables scripts/emulators/versitygw.sh exports.
const (
	versitygwEndpointVar  = "BUCKETLEASE_TEST_VERSITYGW_ENDPOINT"
	versitygwAccessKeyVar = "BUCKETLEASE_TEST_VERSITYGW_ACCESS_KEY"
	versitygwSecretKeyVar = "BUCKETLEASE_TEST_VERSITYGW_SECRET_KEY"
)

// versitygwDeviations are the checks Versity S3 Gateway is known to fail;
// see docs/compatibility.md.
var versitygwDeviations = map[string]string{
	// The posix backend stores key a/b as file b in directory a, so key a
	// cannot also be an object: 409 ExistingObjectIsDirectory, which the
	// S3-family drivers do not map to driver.ErrInvalidKey.
	"key-prefix-of-key": "versitygw's posix backend refuses key k while k/x exists (409 ExistingObjectIsDirectory)",
	// Applies only while the s3 driver declares a conditional delete there.
	"delete-if-match-missing": "versitygw answers DELETE with If-Match on a missing key with 204, not 412 or 404",
}

// TestVersityGateway runs the probe and the lease scenarios on the Versity
// S3 Gateway that scripts/test starts (scripts/emulators/versitygw.sh),
// through the s3 and minio drivers: the one third-party S3 server quick
// enough to build for every test run. (The r2 driver signs for region
// "auto", which the gateway refuses; docs/compatibility.md shows it.)
func TestVersityGateway(t *testing.T) {
	v := testenv.Emulator(t, "Versity S3 Gateway", versitygwEndpointVar, versitygwAccessKeyVar, versitygwSecretKeyVar)
	s := Server{ID: "versitygw", Name: "Versity S3 Gateway", Kind: KindS3, Endpoint: v[versitygwEndpointVar],
		AccessKey: v[versitygwAccessKeyVar], SecretKey: v[versitygwSecretKeyVar]}
	// The drivers read credentials from the environment: set the server's
	// for this test only (t.Setenv restores them), then let setEnv clear
	// everything else.
	for _, name := range append(credentialVars, "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_EC2_METADATA_DISABLED") {
		t.Setenv(name, os.Getenv(name))
	}
	if err := s.setEnv(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	bucket := "bltest-" + randomHex(6)
	if err := createBucket(t.Context(), s, bucket); err != nil {
		t.Fatalf("creating bucket %s: %v", bucket, err)
	}
	for _, scheme := range []string{"s3", "minio"} {
		t.Run(scheme, func(t *testing.T) {
			rawURL, err := s.URL(scheme, bucket, "t")
			if err != nil {
				t.Fatal(err)
			}
			b, prefix, err := location.Open(t.Context(), rawURL)
			if err != nil {
				t.Fatal(err)
			}
			// The report, judged here: a listed deviation may fail in
			// whatever way drivertest classes it (failed, or could not
			// complete), but must not pass (drivertest then says so).
			rep := drivertest.Check(t.Context(), b, drivertest.Options{Prefix: prefix + "/probe", KnownDeviations: versitygwDeviations})
			for _, r := range rep.Results {
				_, listed := versitygwDeviations[r.Name]
				switch {
				case r.Passed || r.Skipped:
				case listed && !strings.Contains(r.Got, "listed as a known deviation"):
					t.Logf("known deviation %s: %s", r.Name, r.Got)
				default:
					t.Errorf("%s: expected %s; got %s", r.Name, r.Expect, r.Got)
				}
			}
			if rep.Observed != rep.Declared {
				t.Errorf("observed %+v, declared %+v", rep.Observed, rep.Declared)
			}
			if got := leaseBehaviour(t.Context(), b, prefix+"/behaviour"); got != LeaseReleaseRecord {
				t.Errorf("the lease: %s; want %s", got, LeaseReleaseRecord)
			}
			for _, sc := range scenarios(t.Context(), b, prefix, Options{Racers: 32, Rounds: 1}) {
				if !sc.Passed {
					t.Errorf("scenario %s failed: %s", sc.Name, sc.Detail)
				}
			}
		})
	}
}
