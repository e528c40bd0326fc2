// Package driver is the contract between the lease and an object store.
//
// A lease is only as strong as the store's compare-and-swap. This package
// names the few operations the lease needs (Get, Put and Delete of one small
// object, each under an optional [Condition]: [IfAbsent] or [IfMatch]) and
// the errors a driver must report ([ErrNotExist], [ErrPrecondition],
// [ErrOutcomeUnknown] and the rest), so that the lease runs unchanged on AWS
// S3, Cloudflare R2, MinIO, Google Cloud Storage, Azure Blob, a local
// directory or memory, and so that a third party can add a store in an
// afternoon and prove it with the drivertest package.
//
// # Registering a driver
//
// A driver registers its URL scheme once, from its package's init function,
// with [Register] and a [Scheme], as database/sql drivers do: the Scheme's
// Open opens a URL, and its Locate says which bucket, prefix and endpoint
// the URL names. A program that reads or writes backups does not import
// this package: it opens a URL with bucket.Open and uses package bucket.
//
// # Writing a driver
//
// A driver implements [Bucket]: six methods that map the operations to one
// SDK's calls and the SDK's errors to this package's sentinels, and nothing
// else. Each method starts with [BeginGet], [BeginPut] or [BeginDelete], which
// enforces the mechanical rules and returns an [Op] whose Context the SDK
// call uses and whose Fail builds every error; [Listing] runs a listing.
// A service that stages a streamed write in parts uses package
// driver/multipart; one that cannot delegates PutStream to [PutWhole].
// What a call sends is in its options ([PutOptions], [GetOptions]) and what it learned is in
// its [Attrs]: the version, the metadata, the service's time.
// [Capabilities] declares the exclusion the service gives; the lease does
// not take it on trust, but probes the service at every acquire.
//
// The obligations a driver meets, each named by the drivertest check that
// proves it, are listed in docs/drivers.md ("The obligations"), with the
// rules for rate limits ([ErrRateLimited]), the service's time
// ([ServiceTime]) and streaming.
//
// io.Closer (and multipart.PendingLister) are optional, found by a type
// assertion as database/sql finds a driver's optional interfaces. A
// Bucket that wraps another embeds it, overrides what it changes, and implements the optional
// ones it passes on.
package driver
