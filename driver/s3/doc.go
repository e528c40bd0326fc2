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
//   - 412 PreconditionFailed, 409 ConditionalRequestConflict (a concurrent
//     conditional request won) and 404 on an If-Match request (the key is
//     missing) are driver.ErrPrecondition. Get of a missing key (404
//     NoSuchKey) is driver.ErrNotExist; a missing bucket is neither.
//   - Delete with IfMatch sends DeleteObject with If-Match, which AWS
//     honours on general-purpose buckets since 2025-09-16.
//   - Every error is a *driver.OpError whose chain holds the SDK's error,
//     so errors.As reaches smithy.APIError and the HTTP response error.
//
// # Known quirks
//
//   - The MinIO server ignores If-Match on DeleteObject: through this driver
//     a conditional Delete on MinIO deletes unconditionally. Use the minio
//     driver, or the r2 profile, which refuse the condition instead.
//   - The SDK retries 5xx and throttling answers. A conditional PUT whose
//     first attempt landed but whose reply was lost comes back refused on
//     the retry; the lease reads the record back to tell this apart.
//   - IfMatch of the empty Version is refused locally as ErrPrecondition:
//     an empty If-Match header is no condition at all to most servers.
//
// Profile describes an S3-compatible service; the r2 package is this
// driver with R2's profile.
package s3
