// Package s3proto holds what the drivers that speak the S3 protocol (s3, r2
// and minio) share whatever SDK they use: how the service says that a
// conditional request's precondition did not hold, that a key or a bucket
// is missing, or that the credentials were refused; and the bucket naming
// rule.
package s3proto

import (
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/mushroomdb/bucketlease/driver"
)

// Refused reports whether an S3 error, given by its code, is the service
// refusing a request because its condition did not hold: PreconditionFailed
// (412); ConditionalRequestConflict (409: a concurrent conditional request
// won); or NoSuchKey on an If-Match request (the key is missing, which AWS
// and MinIO since RELEASE.2025-09-07 answer with 404 rather than 412). The
// code decides, not the status: a 412 or 404 that says something else (a
// proxy's, or NoSuchBucket) is not a refused condition. An unconditional
// request is never refused.
func Refused(code string, status int, cond driver.Condition) bool {
	if cond == (driver.Condition{}) {
		return false
	}
	switch code {
	case "PreconditionFailed", "ConditionalRequestConflict":
		return true
	case "NoSuchKey":
		_, match := cond.Match()
		return match
	}
	return false
}

// Missing reports whether an S3 error says that the key does not exist, as
// opposed to the bucket: the code NoSuchKey. A bare 404 without a code (a
// proxy, or the answer to a HEAD) does not say which is missing, and is not
// taken for a missing key.
func Missing(code string, status int) bool {
	return code == "NoSuchKey"
}

// BucketMissing reports whether an S3 error says that the bucket does not
// exist.
func BucketMissing(code string, status int) bool {
	return code == "NoSuchBucket"
}

// permissionCodes are the S3 error codes for refused credentials or
// permissions that some services send with a status other than 401 or 403.
var permissionCodes = map[string]bool{
	"AccessDenied": true, "InvalidAccessKeyId": true, "SignatureDoesNotMatch": true,
	"ExpiredToken": true, "InvalidToken": true, "TokenRefreshRequired": true,
	"AllAccessDisabled": true, "AccountProblem": true, "InvalidSecurity": true,
	"UnauthorizedAccess": true, "Unauthorized": true, "Forbidden": true,
}

// Permission reports whether an S3 error is the service refusing the
// credentials or the permission: a 401 or 403, or one of the codes that say
// so.
func Permission(code string, status int) bool {
	return status == http.StatusUnauthorized || status == http.StatusForbidden || permissionCodes[code]
}

// RateLimited reports whether an S3 error is the service refusing the
// request for its rate: HTTP 429 (R2 answers a second write to one object
// name within a second so), or the code SlowDown (AWS S3, with 503), which
// asks the client to slow down. A 503 with another code (a proxy's, or
// ServiceUnavailable) is not: it does not say that the request was refused
// before it was applied.
func RateLimited(code string, status int) bool {
	return status == http.StatusTooManyRequests || code == "SlowDown"
}

// Kind classifies an S3 error for a request under cond: ErrPermission,
// ErrRateLimited, ErrBucketNotExist, ErrPrecondition, ErrNotExist, or nil
// for anything else (a network error, a 5xx, an unknown code).
func Kind(code string, status int, cond driver.Condition) error {
	switch {
	case Permission(code, status):
		return driver.ErrPermission
	case RateLimited(code, status):
		return driver.ErrRateLimited
	case BucketMissing(code, status):
		return driver.ErrBucketNotExist
	case Refused(code, status, cond):
		return driver.ErrPrecondition
	case Missing(code, status):
		return driver.ErrNotExist
	}
	return nil
}

// CheckBucketName reports whether name follows the S3 bucket naming rule:
// 3 to 63 characters of lower-case letters, digits, dots and hyphens,
// beginning and ending with a letter or digit, no two dots in a row, and not
// shaped like an IP address. The error says the rule, and where a port or
// an address belongs instead.
func CheckBucketName(name string) error {
	why := ""
	switch {
	case len(name) < 3 || len(name) > 63:
		why = fmt.Sprintf("it is %d characters long", len(name))
	case strings.ContainsFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '-')
	}):
		why = "it has a character other than a lower-case letter, a digit, a dot or a hyphen"
	case !alnum(name[0]) || !alnum(name[len(name)-1]):
		why = "it does not begin and end with a letter or digit"
	case strings.Contains(name, ".."):
		why = "it has two dots in a row"
	case net.ParseIP(name) != nil:
		why = "it is an IP address"
	}
	if why == "" {
		return nil
	}
	return fmt.Errorf("bucket name %q is not valid (%s): bucket names are 3 to 63 lower-case letters, digits, dots "+
		"and hyphens, beginning and ending with a letter or digit", name, why)
}

func alnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }
