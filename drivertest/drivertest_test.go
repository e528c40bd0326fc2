package drivertest_test

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/file"
	"github.com/mushroomdb/bucketlease/driver/mem"
	"github.com/mushroomdb/bucketlease/drivertest"
	"github.com/mushroomdb/bucketlease/internal/faulty"
)

func TestMem(t *testing.T) {
	drivertest.Run(t, mem.New(), drivertest.Options{})
}

func TestFile(t *testing.T) {
	b, err := file.Open(t.TempDir())
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
	drivertest.Run(t, b, drivertest.Options{MissingBucket: missing})
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
			rep := drivertest.Check(context.Background(), b, drivertest.Options{})
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
	rep := drivertest.Check(context.Background(), mem.New(), drivertest.Options{
		KnownDeviations: map[string]string{"delete-if-match-wrong": "pretend the emulator ignores it"},
	})
	if rep.OK() {
		t.Fatal("a passing check listed as a known deviation went unreported")
	}
}

// TestCheckURLsCatchesMistakes shows the URL checks failing on an opener
// that puts the URL, secret and all, into its error and accepts a typo.
func TestCheckURLsCatchesMistakes(t *testing.T) {
	var m driver.Mux
	m.Register("leaky", func(_ context.Context, u *url.URL) (driver.Bucket, string, error) {
		if u.User != nil {
			return nil, "", errors.New("cannot use " + u.User.String())
		}
		return mem.New(), "", nil // ignores its query: a typo fails open
	})
	problems := drivertest.CheckURLs(drivertest.URLCases{
		Valid: []string{"leaky://b/p"},
		Invalid: map[string]string{
			"leaky://b/p?regoin=x":   `unknown query parameter "regoin"`,
			"leaky://ak:hunter2@b/p": "must not hold credentials",
		},
		Secrets: []string{"hunter2"},
		Mux:     &m,
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
