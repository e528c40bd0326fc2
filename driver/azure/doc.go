// Package azure is the Azure Blob Storage driver, built on
// github.com/Azure/azure-sdk-for-go/sdk/storage/azblob. Importing it
// registers the scheme "azblob":
//
//	azblob://CONTAINER/PREFIX?account=ACCOUNT
//	azblob://CONTAINER/PREFIX                 (account from the environment)
//	azblob://CONTAINER/PREFIX?endpoint=https://ACCOUNT.blob.core.windows.net
//
// opens container CONTAINER; the lease lives under PREFIX. The container
// must exist. Objects are block blobs.
//
// # Parameters
//
// Any query parameter other than these is refused, so that a typo cannot
// pass unnoticed:
//
//   - account: the storage account; the service URL is
//     https://ACCOUNT.blob.core.windows.net/. Default: $AZURE_STORAGE_ACCOUNT.
//   - endpoint: the blob service URL itself, for a sovereign cloud, a
//     private endpoint or an emulator, such as
//     http://127.0.0.1:10000/devstoreaccount1 for Azurite. Not together
//     with account.
//
// # Credentials
//
// A URL never carries credentials; one with user information is refused, and
// a SAS token in the query is refused as an unknown parameter. They come
// from, in order:
//
//  1. AZURE_STORAGE_CONNECTION_STRING: a connection string with AccountName
//     and AccountKey, or a SharedAccessSignature. It names its own endpoint,
//     so the endpoint parameter is refused while it is set, and an account
//     parameter must agree with its AccountName. This is how the tests reach
//     Azurite.
//  2. Otherwise the default Azure credential chain
//     (azidentity.NewDefaultAzureCredential: environment service principal,
//     workload identity, managed identity, Azure CLI, ...). Bearer tokens
//     are sent over https only: the SDK refuses an http endpoint for them.
//
// No error of this package contains the connection string or a key: a
// malformed connection string is reported by the variable's name only, and
// a service error is shown as its status and error code (the SDK's full
// error, with the response body, stays in the chain for errors.As).
//
// To configure the client some other way, build a *container.Client and
// pass it to New.
//
// # Versions and exclusion
//
// A Version is the blob's ETag, quoted as the service returns it
// ("0x8DC..."); it works unchanged in If-Match. IfAbsent is sent as
// If-None-Match: * and IfMatch as If-Match, on one Put Blob request
// (blockblob.Client.Upload, up to 5000 MiB: never staged blocks; PutStream
// stages blocks). The service
// refuses with two different statuses, both reported as ErrPrecondition:
// 409 BlobAlreadyExists for If-None-Match: * on an existing blob, and 412
// ConditionNotMet for If-Match, also when the blob does not exist.
//
// Capabilities declares Exclusion Conditional and ConditionalDelete: Delete
// Blob honours If-Match. Delete under IfMatch of a missing blob is
// ErrPrecondition; an unconditional Delete of a missing blob succeeds.
// Get returns the body and the ETag of one Get Blob response; a missing blob
// is ErrNotExist, a missing container ErrBucketNotExist. Errors are
// classified by the service's error code, not the status alone: a 412 such
// as LeaseIdMissing (the blob has an Azure blob lease) is not a refused
// condition. The authentication and authorization codes, 401 and 403, and
// an azidentity credential that could not get a token, are ErrPermission.
// Container names are checked at Open (CheckContainerName); keys follow
// driver.CheckKey (Azurite stores "a\k" as "a/k"), and a key with a segment
// ending in a dot, which Blob Storage advises against, is refused.
//
// # Retries
//
// The SDK retries a request that failed with a transient error, conditional
// ones included (the body is re-sent from memory). A retry whose first
// attempt did land comes back refused: 409 or 412 for a Put, 412 or 404
// for a Delete. Such a refusal after a retry is ErrOutcomeUnknown, never
// ErrPrecondition (driver.Op counts the requests sent); the lease reads the
// record back and recognises its own.
//
// # Streaming writes
//
// Bucket is a driver.Streamer. PutStream sends a body that fits in one
// block (StreamOptions.Size() bytes) as one conditional Put Blob, as Put
// does. A longer one is staged as blocks of Size() bytes (Put Block), with
// up to Parallel() of them in flight, and committed by one Put Block List
// under If-None-Match: * or If-Match, which the service checks atomically
// with the commit: nothing is visible before it, and a refusal there (409
// BlobAlreadyExists, 412 ConditionNotMet) is ErrPrecondition with the blob
// left as it was. At most Size() × Parallel() bytes of the body are held at
// once. MayStart is called right before each block is staged and before
// the commit; once it refuses, nothing more is started.
//
// Block IDs are "bl", a random 32-hex-digit prefix per upload, "-" and a
// six-digit block number: one length for every upload by this driver (Blob
// Storage refuses a block whose ID length differs from the blob's other
// uncommitted blocks) and unique per upload, so that a commit names only
// its own upload's blocks. Two uploads to one blob cannot mix: when one
// commits, the service discards the blob's other uncommitted blocks, and
// the other upload's commit fails with 400 InvalidBlockList, which is
// ErrPrecondition where its condition no longer holds (the driver reads
// the blob's properties to tell) and otherwise an error saying that its
// blocks were discarded (TestStreamConcurrentUploadsDoNotMix).
//
// Blob Storage has no call that discards staged blocks. A PutStream that
// fails (ctx ended, the reader failed, MayStart refused, a block or the
// commit failed or was refused) cancels the blocks in flight and returns
// once none is, having committed nothing; the uncommitted blocks are left
// to the service, which discards them a week after the blob's last Put
// Block, or when the blob is next committed. The error's
// *driver.UploadError says how many blocks were started (Staged) and, as
// no abort could be sent (Aborted false, AbortErr nil), what becomes of
// them (Upload, in its message). A blob with only uncommitted
// blocks is not an object: Get reports ErrNotExist and List omits it.
//
// The SDK's retry policy looks at the context after every response, a
// successful one included, and reports the context's end in its place. A
// write (Put Blob, Put Block List, Delete Blob) whose context ends as the
// service's success arrives did land; the driver captures the response
// (policy.WithCaptureResponse) and reports it as done, with its ETag,
// rather than as cancelled with the blob changed.
//
// # Listing
//
// Bucket is a driver.Lister: List pages through the container's
// ListBlobsFlat pager with the prefix, 1,000 blobs a page, in lexical
// order, committed blobs only. An Object's Version is the blob's ETag in
// the quoted form Get returns (the listing's XML carries it bare, as
// Azurite 3.35.0 does: <Etag>0x8D...</Etag>), Size its length and ModTime
// its Last-Modified time.
//
// # Closing
//
// A Bucket needs no Close, and has none (driver.Close returns nil): the
// clients it builds use the SDK's process-wide default HTTP client
// (azcore's shared transport), so opening a bucket adds no connection pool
// and no goroutine that would outlive it (TestOpenWithoutClose). A
// *container.Client passed to New with a transport of its own stays its
// caller's to close (CloseIdleConnections on that transport).
//
// # Known quirks
//
//   - Azurite (tested at 3.35.0) enforces both preconditions on Put Blob and
//     If-Match on Delete Blob as the service does; the conformance suite
//     passes against it with no deviation.
//   - Azurite 3.35.0 checks If-None-Match: * (409 BlobAlreadyExists) and
//     If-Match (412 ConditionNotMet) on Put Block List, before it looks at
//     the block list, and treats a blob with only uncommitted blocks as
//     absent, as the service does (TestStreamConditionAtCommit writes the
//     key between the blocks and the commit and sees the commit refused).
//     It discards a blob's uncommitted blocks when the blob is committed,
//     so a second upload's commit fails with 400 InvalidBlockList.
//   - Azurite 3.36.0 and later declare Node.js >= 21 (3.37.0: >= 22);
//     scripts/test pins 3.35.0, which runs on the Node.js 20 that CI has.
//     Azurite is started with --skipApiVersionCheck, since the SDK speaks a
//     newer API version than the emulator knows.
//
// # Tests
//
// scripts/test starts Azurite and exports BUCKETLEASE_TEST_AZURITE_ENDPOINT
// and BUCKETLEASE_TEST_AZURITE_CONNECTION_STRING (its public development
// account). Setting BUCKETLEASE_TEST_AZURE_URL to an azblob:// URL of a real
// container (credentials as above) runs the conformance suite against Azure,
// with no deviation allowed.
package azure
