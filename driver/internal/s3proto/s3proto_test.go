package s3proto

import (
	"strings"
	"testing"

	"github.com/mushroomdb/bucketlease/driver"
)

// TestRefused: the service's error code decides whether a write was
// refused, not the status alone.
func TestRefused(t *testing.T) {
	match, absent, none := driver.IfMatch(`"abc"`), driver.IfAbsent(), driver.Condition{}
	cases := []struct {
		code   string
		status int
		cond   driver.Condition
		want   bool
	}{
		{"PreconditionFailed", 412, absent, true},
		{"", 412, match, false},
		{"SomethingElse", 412, match, false},
		{"ConditionalRequestConflict", 409, absent, true},
		{"NoSuchKey", 404, match, true},
		{"NoSuchKey", 404, absent, false},
		{"", 404, match, false},
		{"NoSuchBucket", 404, match, false},
		{"PreconditionFailed", 412, none, false},
		{"AccessDenied", 403, match, false},
		{"InternalError", 500, absent, false},
	}
	for _, c := range cases {
		if got := Refused(c.code, c.status, c.cond); got != c.want {
			t.Errorf("Refused(%q, %d, %v) = %v, want %v", c.code, c.status, c.cond, got, c.want)
		}
	}
}

func TestMissing(t *testing.T) {
	if !Missing("NoSuchKey", 404) || Missing("", 404) || Missing("NoSuchBucket", 404) || Missing("AccessDenied", 403) {
		t.Fatal("Missing")
	}
}

func TestKind(t *testing.T) {
	match := driver.IfMatch(`"abc"`)
	cases := []struct {
		code   string
		status int
		want   error
	}{
		{"AccessDenied", 403, driver.ErrPermission},
		{"InvalidAccessKeyId", 403, driver.ErrPermission},
		{"SignatureDoesNotMatch", 403, driver.ErrPermission},
		{"", 401, driver.ErrPermission},
		{"NoSuchBucket", 404, driver.ErrBucketNotExist},
		{"PreconditionFailed", 412, driver.ErrPrecondition},
		{"NoSuchKey", 404, driver.ErrPrecondition},
		{"SlowDown", 503, driver.ErrRateLimited},
		{"TooManyRequests", 429, driver.ErrRateLimited},
		{"", 429, driver.ErrRateLimited},
		{"ServiceUnavailable", 503, nil},
		{"", 503, nil},
		{"AccessDenied", 429, driver.ErrPermission},
	}
	for _, c := range cases {
		if got := Kind(c.code, c.status, match); got != c.want {
			t.Errorf("Kind(%q, %d) = %v, want %v", c.code, c.status, got, c.want)
		}
	}
	if got := Kind("NoSuchKey", 404, driver.Condition{}); got != driver.ErrNotExist {
		t.Errorf("Kind(NoSuchKey) on a get = %v", got)
	}
}

// TestCheckBucketName: a name outside the S3 bucket naming rule (a port,
// an address, upper case, two dots) is refused with the rule; a valid one
// is accepted.
func TestCheckBucketName(t *testing.T) {
	for _, ok := range []string{"bucket", "my-bucket.logs", "b12", strings.Repeat("a", 63)} {
		if err := CheckBucketName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"bucket:9000", "[::1]", "::1", "Bucket_Bad", "ab", strings.Repeat("a", 64), "-b-", "a..b", "192.168.1.1", "b/c", ""} {
		err := CheckBucketName(bad)
		if err == nil || !strings.Contains(err.Error(), "lower-case letters") {
			t.Errorf("%q: %v, want a refusal stating the rule", bad, err)
		}
	}
}
