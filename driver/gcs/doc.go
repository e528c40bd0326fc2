// Package gcs is the Google Cloud Storage driver, built on
// cloud.google.com/go/storage. Importing it registers the scheme "gs":
//
//	gs://BUCKET/PREFIX
//	gs://BUCKET/PREFIX?endpoint=http://127.0.0.1:4443
//
// opens bucket BUCKET; the lease lives under PREFIX. The bucket must exist.
//
// # Parameters
//
// The URL takes one optional query parameter; any other is refused, so that
// a typo cannot pass unnoticed:
//
//   - endpoint: the base URL of the JSON API, for an emulator such as
//     fake-gcs-server or a private endpoint; "/storage/v1/" is appended. An
//     http:// endpoint is sent no credentials at all (a token never crosses
//     the network in clear text); an https:// one gets Application Default
//     Credentials. It takes precedence over STORAGE_EMULATOR_HOST.
//
// # Credentials
//
// Credentials come from Application Default Credentials, as for any Google
// client library: GOOGLE_APPLICATION_CREDENTIALS, the gcloud user's
// credentials, or the metadata server's workload identity. A URL never
// carries them; one with user information is refused. When the environment
// variable STORAGE_EMULATOR_HOST is set (host:port or a URL), the client
// library itself sends every request there without credentials.
//
// To configure the client some other way, build it yourself and pass it to
// New.
//
// # Versions and exclusion
//
// A Version is the object's generation in decimal. Cloud Storage compares
// only generations in its write preconditions, so IfAbsent is sent as
// ifGenerationMatch=0 (Conditions.DoesNotExist) and IfMatch(v) as
// ifGenerationMatch=v. The service answers a failed precondition with 412
// and the reason conditionNotMet, which is ErrPrecondition (a 412 with
// another reason is not); IfMatch on a missing key is 412 as well. 401 and
// 403 are ErrPermission. A
// Version that is not a positive decimal generation (such as "", "0", which
// Cloud Storage would read as "does not exist", or an ETag) cannot match any
// object: Put and Delete under IfMatch of it fail with ErrPrecondition
// without sending anything.
//
// Capabilities declares Exclusion Conditional and ConditionalDelete: the
// service checks ifGenerationMatch atomically on uploads and on deletes.
// Delete under IfMatch of a missing key is ErrPrecondition; an unconditional
// Delete of a missing key succeeds.
//
// Get returns the body and the generation of one read response
// (Reader.Attrs.Generation). Reads use the JSON API (storage.WithJSONReads)
// when the bucket is opened by URL.
//
// # One request per write, and retries
//
// Put sets Writer.ChunkSize to 0, so every body, whatever its size, goes in
// one multipart upload request, never a resumable upload (which some
// emulators check preconditions on differently). The client library does not
// retry such a request (it keeps no copy of the body): a Put that fails on
// the network has an unknown outcome, and the caller (the lease) finds out
// by reading the object back.
//
// Delete, Get and the other calls are retried by the client library on
// transient errors. A Delete under IfMatch is idempotent to the library, so
// a retry whose first attempt did delete the object comes back 404, which
// this driver reports as ErrPrecondition. A client passed to New may use
// other settings: if it retries a conditional upload, a retry whose first
// attempt landed comes back 412, which this driver reports as
// ErrOutcomeUnknown (driver.Op counts the requests sent), never
// ErrPrecondition.
//
// # Known quirks
//
//   - fake-gcs-server (tested at v1.56.1) ignores ifGenerationMatch on
//     DELETE (fsouza/fake-gcs-server#1282): a conditional Delete with a
//     wrong generation deletes the object. The driver still declares
//     ConditionalDelete, since Cloud Storage honours it; the emulator test
//     lists the check as a known deviation.
//   - fake-gcs-server serves the client library's default XML reads
//     (/BUCKET/OBJECT) only on its -public-host; the driver's JSON reads
//     do not depend on it.
//   - The client library maps every 404 to storage.ErrObjectNotExist, a
//     missing bucket included. On a 404 the driver looks the bucket up
//     (one more request, on that path only), and a missing bucket is
//     driver.ErrBucketNotExist on every operation, never ErrNotExist: a
//     lease in a misspelt bucket must not read as free. (A principal that
//     may not read the bucket's metadata, storage.buckets.get, cannot tell;
//     the driver then takes the bucket to exist.)
//   - fake-gcs-server stores an object under the empty name; keys follow
//     driver.CheckKey, which refuses it.
//   - Bucket names are checked at Open (CheckBucketName).
//
// # Tests
//
// scripts/test starts fake-gcs-server and exports
// BUCKETLEASE_TEST_GCS_ENDPOINT. Setting BUCKETLEASE_TEST_GCS_URL to a gs://
// URL of a real bucket (credentials from Application Default Credentials)
// runs the conformance suite against Cloud Storage, with no deviation
// allowed.
package gcs
