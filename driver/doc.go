// Package driver is the contract between the lease and an object store.
//
// A lease is only as strong as the store's compare-and-swap. This package
// names the few operations the lease needs (Get, Put and Delete of one small
// object, each under an optional precondition) and the errors a driver must
// report, so that the lease can run unchanged on AWS S3, Cloudflare R2, MinIO,
// Google Cloud Storage, Azure Blob, a local directory or memory, and so that
// a third party can add a store in an afternoon and prove it with the
// drivertest package.
//
// # Writing a driver
//
// A driver implements Bucket. Its obligations, each checked by
// drivertest.Run:
//
//   - Get returns the body and the Version of one stored object from one
//     response. A missing key is ErrNotExist.
//   - Put sends one request and returns the Version it created. Under
//     IfAbsent it must fail with ErrPrecondition if the key exists; under
//     IfMatch(v) it must fail with ErrPrecondition unless the key exists with
//     version v. A refused write leaves the stored object exactly as it was,
//     is never reported as success and never as ErrNotExist, whatever status
//     code the service used for it.
//   - Delete of a missing key succeeds. Delete honours IfMatch where
//     Capabilities says ConditionalDelete; a driver whose service ignores a
//     condition on delete says so, and refuses a conditional Delete with
//     ErrUnsupported rather than sending it.
//   - Every error keeps the service's own error in its chain (OpError does
//     this), and a cancelled context yields an error for which
//     errors.Is(err, context.Canceled) holds (WithContext sees to it
//     whatever the SDK made of the cancellation).
//   - Versions are opaque strings that the driver normalises, so that a
//     Version returned by Put or Get works unchanged in the next IfMatch.
//
// A driver registers a URL scheme in its package's init function with
// Register, as database/sql drivers do, and users open it with Open.
//
// # Exclusion
//
// Capabilities.Exclusion is the driver's declaration of how strongly the
// service enforces preconditions. The lease does not take it on trust: it
// probes the service at every acquire, and drivertest verifies the
// declaration.
package driver
