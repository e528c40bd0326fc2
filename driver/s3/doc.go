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
// Credentials come from the AWS SDK's default chain, never from the URL; a
// URL with user info is refused. To bring your own client (retries, HTTP
// client, assumed role), build an *s3.Client of the SDK and call [New].
//
// Put is one PutObject with the whole body under If-None-Match: * or
// If-Match of the quoted ETag. The driver declares Conditional exclusion,
// and a conditional Delete only for AWS itself: another endpoint may ignore
// If-Match on DeleteObject (MinIO does). docs/drivers.md ("s3:// — Amazon
// S3 and S3-compatible services") has the details.
package s3
