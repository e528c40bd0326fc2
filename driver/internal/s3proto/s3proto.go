// Package s3proto holds what the S3-protocol drivers (s3, r2, minio)
// share whatever SDK they use: error classification, the bucket naming
// rule and streamed uploads.
package s3proto

import (
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/mushroomdb/bucketlease/driver"
)

// Refused reports whether an S3 error is a refused condition:
// PreconditionFailed, ConditionalRequestConflict, or NoSuchKey under
// If-Match. The code decides, not the status: a proxy's 412 is not one.
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

// Missing reports whether an S3 error says the key, not the bucket, is
// missing (NoSuchKey); a bare 404 does not say which.
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

// RateLimited reports whether an S3 error refuses the request for its
// rate (429, or SlowDown); another 503 does not say the request was not
// applied.
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

// CheckBucketName reports whether name follows the S3 bucket naming rule;
// the error says the rule.
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
