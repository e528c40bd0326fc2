package drivertest

import (
	"regexp"
	"strings"
	"testing"
)

// TestRunPatternSelectsExactlyTheTest: the -test.run pattern a child gets
// matches, level by level, the test it names and no other, whatever
// characters the names hold.
func TestRunPatternSelectsExactlyTheTest(t *testing.T) {
	for _, tc := range []struct {
		name  string
		other []string
	}{
		{"TestFile/exclusion-across-processes", []string{"TestFileX/exclusion-across-processes", "TestFile/exclusion-across-processes#01"}},
		{"TestConformance/s3_(MinIO)/exclusion-across-processes#01", []string{"TestConformance/s3_MinIO/exclusion-across-processes#01", "TestConformance/s3_(MinIO)/exclusion-across-processes"}},
		{"Test.*/exclusion-across-processes", []string{"TestA/exclusion-across-processes"}},
	} {
		p := strings.Split(runPattern(tc.name), "/")
		matches := func(name string) bool {
			n := strings.Split(name, "/")
			if len(n) != len(p) {
				return false
			}
			for i := range n {
				if !regexp.MustCompile(p[i]).MatchString(n[i]) {
					return false
				}
			}
			return true
		}
		if !matches(tc.name) {
			t.Errorf("runPattern(%q) = %q does not match it", tc.name, runPattern(tc.name))
		}
		for _, o := range tc.other {
			if matches(o) {
				t.Errorf("runPattern(%q) = %q matches %q too", tc.name, runPattern(tc.name), o)
			}
		}
	}
}
