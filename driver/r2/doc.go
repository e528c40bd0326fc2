// Package r2 is the driver for Cloudflare R2: the s3 driver with R2's
// profile. Importing it registers the scheme "r2":
//
//	r2://ACCOUNT_ID/BUCKET/PREFIX
//	r2://ACCOUNT_ID/BUCKET/PREFIX?endpoint=URL
//
// The endpoint is https://ACCOUNT_ID.r2.cloudflarestorage.com unless the
// endpoint parameter gives another; no other parameter is accepted.
// Credentials come from the AWS SDK's default chain (an R2 API token's keys
// as AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), never from the URL.
//
// The client uses region "auto", path-style addressing, and checksums only
// when required: the SDK's default CRC32 headers get 501 from R2.
//
// R2 declares Conditional exclusion and no conditional Delete (R2 documents
// no If-Match on DeleteObject, so Delete with IfMatch returns
// driver.ErrUnsupported without sending anything). Whether R2 honours the
// condition on CompleteMultipartUpload, or makes concurrent If-None-Match
// writes atomic, is not documented; the lease probes what it can.
// docs/drivers.md ("r2:// — Cloudflare R2" and "Known quirks") has the
// details.
package r2
