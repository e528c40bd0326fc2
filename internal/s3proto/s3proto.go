// Package s3proto holds what the drivers that speak the S3 protocol (s3, r2
// and minio) share whatever SDK they use: how the service says that a
// conditional request's precondition did not hold.
package s3proto

import (
	"net/http"

	"github.com/mushroomdb/bucketlease/driver"
)

// Refused reports whether an S3 error, given by its code and HTTP status,
// is the service refusing a request because its condition did not hold:
// 412 PreconditionFailed; 409 ConditionalRequestConflict (a concurrent
// conditional request won); or a 404 other than NoSuchBucket on an
// If-Match request (the key is missing, which AWS and MinIO since
// RELEASE.2025-09-07 answer with 404 rather than 412). An unconditional
// request is never refused.
func Refused(code string, status int, cond driver.Condition) bool {
	if cond.Unconditional() {
		return false
	}
	switch {
	case code == "PreconditionFailed" || status == http.StatusPreconditionFailed:
		return true
	case code == "ConditionalRequestConflict":
		return true
	case status == http.StatusNotFound && code != "NoSuchBucket":
		_, match := cond.Match()
		return match
	}
	return false
}

// Missing reports whether an S3 error says that the key does not exist, as
// opposed to the bucket: NoSuchKey, or a 404 without a code (the answer to a
// HEAD) other than NoSuchBucket.
func Missing(code string, status int) bool {
	return code == "NoSuchKey" || (status == http.StatusNotFound && code != "NoSuchBucket")
}
