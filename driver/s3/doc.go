// Package s3 is the driver for Amazon S3 and S3-compatible services, on
// aws-sdk-go-v2. Importing it registers the scheme "s3":
//
//	s3://BUCKET/PREFIX?region=REGION&endpoint=URL&path_style=true
//
// Parameters (any other is refused, so a typo cannot fail open):
//
//   - region: the bucket's region. If absent, the SDK's chain (AWS_REGION,
//     the shared config file) must give one.
//   - endpoint: the base URL of an S3-compatible service, such as
//     http://127.0.0.1:9000 for a local MinIO. Absent means AWS.
//   - path_style: true to address the bucket in the path rather than the
//     host name (most self-hosted services need it).
//
// Credentials come from the AWS SDK's default chain (AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY, AWS_PROFILE and the shared files, SSO, web
// identity, ECS and EC2 roles), never from the URL; a URL with user info is
// refused. To bring your own client (retries, HTTP client, assumed role),
// build an *s3.Client of the SDK and call New.
//
// # Semantics
//
// The driver declares Conditional exclusion and a conditional Delete:
//
//   - Put is one PutObject request with the whole body (a bytes.Reader
//     with its ContentLength; bodies over MaxPutSize are refused, never
//     split into a multipart upload). IfAbsent is If-None-Match: *, IfMatch
//     is If-Match with the ETag.
//   - Versions are the ETags exactly as S3 returns them, quoted; they are
//     echoed back verbatim.
//   - Errors are classified by the service's error code, not the status
//     alone (internal/s3proto): PreconditionFailed (412),
//     ConditionalRequestConflict (409: a concurrent conditional request
//     won) and NoSuchKey on an If-Match request are driver.ErrPrecondition;
//     NoSuchKey on a Get is driver.ErrNotExist; NoSuchBucket is
//     driver.ErrBucketNotExist; 401, 403 and the credential codes
//     (AccessDenied, InvalidAccessKeyId, SignatureDoesNotMatch, ...), and a
//     request the SDK could not sign for want of credentials, are
//     driver.ErrPermission.
//   - Get without an ETag in the response is an error, never an empty
//     version.
//   - Delete with IfMatch sends DeleteObject with If-Match, which AWS
//     honours on general-purpose buckets since 2025-09-16. The driver
//     declares a conditional delete only for AWS itself (no endpoint, or an
//     https endpoint under amazonaws.com): with any other endpoint (MinIO,
//     Ceph, a gateway) it cannot vouch that the service honours the
//     condition, so it declares none and refuses a conditional Delete with
//     driver.ErrUnsupported without sending it.
//   - The URL's host must be a valid bucket name (3 to 63 lower-case
//     letters, digits, dots and hyphens; not an IP address): a port or an
//     address belongs in the endpoint parameter.
//   - Every error is a *driver.OpError whose chain holds the SDK's error,
//     so errors.As reaches smithy.APIError and the HTTP response error.
//
// # Known quirks
//
//   - The MinIO server ignores If-Match on DeleteObject, which is why a
//     custom endpoint gets no conditional delete (above).
//   - The SDK retries 5xx and throttling answers. A conditional PUT whose
//     first attempt landed but whose reply was lost comes back refused on
//     the retry: that is driver.ErrOutcomeUnknown, not ErrPrecondition, and
//     the lease reads the record back.
//   - IfMatch of the empty Version, or of one S3 would read as a wildcard
//     or a list ("*", "a,b"), is refused locally as ErrPrecondition.
//   - Keys follow driver.CheckKey: MinIO stores "/a/k" as "a/k", so a key
//     with an empty segment is refused with driver.ErrInvalidKey.
//
// Profile describes an S3-compatible service; the r2 package is this
// driver with R2's profile.
package s3
