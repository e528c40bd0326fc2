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
// Credentials come from the environment, never from the URL (see
// [Credentials]).
//
// The driver declares Conditional exclusion and no conditional Delete (the
// server ignores If-Match on DeleteObject). Put is one PUT of the exact
// size, so the condition covers the whole body; Versions are unquoted
// ETags. Use a server at RELEASE.2025-09-07T16-13-09Z or later: older ones
// mishandle preconditions. docs/drivers.md ("minio:// — MinIO") has the
// details.
package minio
