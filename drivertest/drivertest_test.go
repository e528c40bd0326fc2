package drivertest_test

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/azure"
	"github.com/mushroomdb/bucketlease/driver/file"
	"github.com/mushroomdb/bucketlease/driver/gcs"
	"github.com/mushroomdb/bucketlease/driver/mem"
	"github.com/mushroomdb/bucketlease/driver/minio"
	"github.com/mushroomdb/bucketlease/driver/r2"
	"github.com/mushroomdb/bucketlease/driver/s3"
	"github.com/mushroomdb/bucketlease/drivertest"
	"github.com/mushroomdb/bucketlease/drivertest/faulty"
)

func TestMem(t *testing.T) {
	drivertest.Run(t, mem.New(), drivertest.Options{BucketFaults: true})
}

func TestFile(t *testing.T) {
	dir := t.TempDir()
	b, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	gone := filepath.Join(t.TempDir(), "gone")
	missing, err := file.Open(gone)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(gone); err != nil {
		t.Fatal(err)
	}
	drivertest.Run(t, b, drivertest.Options{MissingBucket: missing, URL: "file://" + dir, BucketFaults: true})
}

// TestNegativeControls runs the suite against buckets that break the
// contract and requires it to notice: a suite that cannot fail proves nothing.
func TestNegativeControls(t *testing.T) {
	cases := []struct {
		name       string
		ignore     faulty.Ignore
		mustFail   []string
		observedEx driver.Exclusion
	}{
		{"ignores IfAbsent", faulty.IgnoreIfAbsent,
			[]string{"put-if-absent-existing", "race-if-absent", "lease-acquire"}, driver.NoExclusion},
		{"ignores IfMatch", faulty.IgnoreIfMatch,
			[]string{"put-if-match-stale", "put-if-match-made-up", "put-if-match-missing", "cas-counter", "lease-acquire", "lease-takeover"}, driver.NoExclusion},
		{"reports refused writes as success", faulty.LieOnRefusal,
			[]string{"put-if-absent-existing", "put-if-match-stale", "put-if-match-made-up", "put-if-match-missing", "race-if-absent", "lease-acquire"}, driver.NoExclusion},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := &faulty.Bucket{Bucket: mem.New(), Ignore: c.ignore}
			rep := drivertest.CheckOnly(context.Background(), b, drivertest.Options{}, c.mustFail...)
			if rep.OK() {
				t.Fatal("the suite reported a broken bucket as conforming")
			}
			failed := map[string]bool{}
			for _, r := range rep.Results {
				if !r.Passed && !r.Skipped {
					failed[r.Name] = true
				}
			}
			for _, name := range c.mustFail {
				if !failed[name] {
					t.Errorf("check %s passed against a bucket that %s", name, c.name)
				}
			}
			if rep.Observed.Exclusion != c.observedEx {
				t.Errorf("observed exclusion %v, want %v", rep.Observed.Exclusion, c.observedEx)
			}
		})
	}
}

// TestKnownDeviationMustStillDeviate shows that a KnownDeviations entry for a
// check that passes is itself reported, so stale entries cannot hide.
func TestKnownDeviationMustStillDeviate(t *testing.T) {
	rep := drivertest.CheckOnly(context.Background(), mem.New(), drivertest.Options{
		KnownDeviations: map[string]string{"delete-if-match-wrong": "pretend the emulator ignores it"},
	}, "delete-if-match-wrong")
	if rep.OK() {
		t.Fatal("a passing check listed as a known deviation went unreported")
	}
}

// The schemes this package's tests open: "leaky", an opener with the
// mistakes CheckURLs must catch, and every in-module driver's exported
// Open and Locate under a scheme of the test's choosing.
func init() {
	driver.Register("leaky", driver.Scheme{Open: func(_ context.Context, u *url.URL) (driver.Bucket, string, error) {
		if u.User != nil {
			return nil, "", errors.New("cannot use " + u.User.String())
		}
		return mem.New(), "", nil // ignores its query: a typo fails open
	}})
	driver.Register("my-s3", driver.Scheme{Open: s3.OpenURL, Locate: s3.Locate})
	driver.Register("my-r2", driver.Scheme{Open: r2.OpenURL, Locate: r2.Locate})
	driver.Register("my-gs", driver.Scheme{Open: gcs.OpenURL, Locate: gcs.Locate})
	driver.Register("my-az", driver.Scheme{Open: azure.OpenURL, Locate: azure.Locate})
	driver.Register("my-minio", driver.Scheme{Open: minio.OpenURL, Locate: minio.Locate})
	driver.Register("my-file", driver.Scheme{Open: file.OpenURL, Locate: file.Locate})
	driver.Register("my-mem", driver.Scheme{Open: mem.OpenURL, Locate: mem.Locate})
}

// TestCheckURLsCatchesMistakes shows the URL checks failing on an opener
// that puts the URL, secret and all, into its error and accepts a typo.
func TestCheckURLsCatchesMistakes(t *testing.T) {
	problems := drivertest.CheckURLs(drivertest.URLCases{
		Valid: []string{"leaky://b/p"},
		Invalid: map[string]string{
			"leaky://b/p?regoin=x":   `unknown query parameter "regoin"`,
			"leaky://ak:hunter2@b/p": "must not hold credentials",
		},
		Secrets: []string{"hunter2"},
	})
	var typo, leak bool
	for _, p := range problems {
		typo = typo || strings.Contains(p, "regoin") && strings.Contains(p, "succeeded")
		leak = leak || strings.Contains(p, "printed the secret")
	}
	if !typo || !leak {
		t.Fatalf("the checks missed a mistake: %q", problems)
	}
}

// TestDocListsEveryCheck: the section "## The obligations" of
// docs/drivers.md lists the driver's obligations, each with the checks that
// prove it; every check is named there, and every name there is a check.
func TestDocListsEveryCheck(t *testing.T) {
	doc, err := os.ReadFile("../docs/drivers.md")
	if err != nil {
		t.Fatal(err)
	}
	_, text, ok := strings.Cut(string(doc), "\n## The obligations\n")
	if !ok {
		t.Fatal(`docs/drivers.md has no section "## The obligations"`)
	}
	text, _, _ = strings.Cut(text, "\n## ")
	for _, name := range drivertest.Names() {
		if !strings.Contains(text, name) {
			t.Errorf("docs/drivers.md's obligations do not name the check %s", name)
		}
	}
	known := map[string]bool{}
	for _, n := range drivertest.Names() {
		known[n] = true
	}
	for _, m := range regexp.MustCompile(`\(([a-z0-9-]+(?:,\s*[a-z0-9-]+)*)`).FindAllStringSubmatch(text, -1) {
		for _, name := range regexp.MustCompile(`[a-z0-9-]+`).FindAllString(m[1], -1) {
			if strings.Contains(name, "-") && !known[name] {
				t.Errorf("docs/drivers.md's obligations name %q, which is not a check", name)
			}
		}
	}
}

// TestRunURLsUnderAnotherScheme: every driver's exported Open and Locate
// serve a scheme of the caller's choosing.
func TestRunURLsUnderAnotherScheme(t *testing.T) {
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AZURE_STORAGE_CONNECTION_STRING", "")
	t.Setenv("MINIO_ACCESS_KEY", "k")
	t.Setenv("MINIO_SECRET_KEY", "s")
	drivertest.RunURLs(t, drivertest.URLCases{
		Valid: []string{"my-s3://bkt/p", "my-r2://0123456789abcdef0123456789abcdef/bkt/p", "my-gs://bkt/p?endpoint=http://127.0.0.1:1",
			"my-az://cnt/p?account=acct", "my-minio://127.0.0.1:1/bkt/p?tls=false", "my-file://" + t.TempDir(), "my-mem://b/p"},
		Invalid: map[string]string{"my-s3://Bad_Bucket/p": "bucket name", "my-s4://bkt/p": "unknown URL scheme"},
	})
}
