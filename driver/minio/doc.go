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
// client, build a *minio.Client and call [New].
//
// The driver declares Conditional exclusion and no conditional Delete. Put
// is always one PUT request: the exact size is passed and multipart is
// disabled, so the condition covers the whole body; bodies over
// [MaxPutSize] are refused. IfAbsent is If-None-Match: *, IfMatch is
// If-Match; Versions are ETags without quotes, as minio-go reports them,
// and a quoted ETag from the s3 driver works too. Get is one GET through
// minio.Core, so the body and the version come from one response. The
// MinIO server ignores If-Match on DeleteObject, so Delete with IfMatch
// returns driver.ErrUnsupported without sending anything.
//
// Use a server at RELEASE.2025-09-07T16-13-09Z or later: older ones ignore
// the preconditions or mishandle a conditional PUT to a missing key, and
// the lease's probe refuses a server that ignores them. docs/drivers.md
// ("minio:// — MinIO" and its known quirks) has the details: how each
// error code maps, retries, the signing of streamed parts.
package minio
