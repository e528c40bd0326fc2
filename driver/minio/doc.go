// Package minio is the driver for MinIO servers, on minio-go v7. Importing
// it registers the scheme "minio":
//
//	minio://HOST:PORT/BUCKET/PREFIX
//	minio://127.0.0.1:9000/BUCKET/PREFIX?tls=false
//
// Parameters (any other is refused, so a typo cannot fail open):
//
//   - tls: TLS is on by default; tls=false speaks plain HTTP, for loopback.
//   - region: the server's region, if it has one configured.
//
// Credentials come from the environment, never from the URL:
// MINIO_ROOT_USER and MINIO_ROOT_PASSWORD, else MINIO_ACCESS_KEY and
// MINIO_SECRET_KEY, else AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
// AWS_SESSION_TOKEN. Opening fails if none is set. To bring your own
// client, build a *minio.Client and call New.
//
// # Semantics
//
// The driver declares Conditional exclusion and no conditional Delete:
//
//   - Put is always one PUT request: the exact size is passed and
//     multipart is disabled, so the condition covers the whole body; bodies
//     over MaxPutSize are refused. IfAbsent is SetMatchETagExcept("*")
//     (If-None-Match: *), IfMatch is SetMatchETag(etag) (If-Match).
//   - Versions are ETags without quotes, as minio-go reports them. IfMatch
//     strips quotes before minio-go adds its own, so a quoted ETag from the
//     s3 driver works here too.
//   - Errors are classified by the S3 error code (internal/s3proto):
//     PreconditionFailed, ConditionalRequestConflict and NoSuchKey on an
//     If-Match PUT (servers since RELEASE.2025-09-07T16-13-09Z answer a
//     missing key so) are driver.ErrPrecondition; NoSuchKey on a Get is
//     driver.ErrNotExist; NoSuchBucket is driver.ErrBucketNotExist; 401,
//     403 and the credential codes are driver.ErrPermission. Errors are
//     recognised with errors.As on minio.ErrorResponse, which stays in the
//     chain. A refusal after minio-go retried the PUT is
//     driver.ErrOutcomeUnknown.
//   - Get without an ETag is an error; IfMatch of a wildcard or a list
//     ("*", which the server honours as any version) is refused locally;
//     keys follow driver.CheckKey (the server stores "/a/k" as "a/k").
//   - The MinIO server ignores If-Match on DeleteObject, so Delete with
//     IfMatch returns driver.ErrUnsupported without sending anything.
//
// # Known quirks
//
//   - minio-go's Client.GetObject returns an Object that sends a HEAD for
//     Stat and then a GET with If-Match for the body: the version and the
//     body come from two requests, and a write in between makes the read
//     fail with 412. Get uses minio.Core's GetObject, one GET, instead.
//   - minio.ToErrorResponse does not look through wrapped errors.
//   - Over plain HTTP minio-go signs a part with the streaming signature
//     (a SHA-256, an HMAC and a new buffer per 64 KiB chunk), whose
//     garbage doubled the peak heap of a streamed write. PutStream's parts
//     are in memory, so over plain HTTP each is sent with its SHA-256 as
//     the signed payload hash instead (the server checks it as it checks
//     the chunks); over TLS minio-go sends UNSIGNED-PAYLOAD either way.
//   - Servers before RELEASE.2023-02-09 ignore the preconditions; before
//     RELEASE.2025-09-07 they mishandle a conditional PUT to a missing key.
//     Use RELEASE.2025-09-07T16-13-09Z or later; the lease's probe refuses
//     a server that ignores them.
package minio
