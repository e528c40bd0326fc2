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
// Put sends every body, whatever its size, in one multipart upload request,
// never a resumable upload (which emulators before fake-gcs-server v1.55.0
// checked no precondition on); PutStream is the resumable write. It sets
// Writer.ChunkSize larger than the body, so that the client library reads
// the whole body into its buffer before it sends the request (the buffer is
// a copy: a Put holds its body twice while it is sent). With ChunkSize 0
// the library would stream the body into the request instead, and when its
// source fails mid-body (the context was cancelled) it still writes the
// multipart body's closing boundary, so the service may store the part it
// received as the whole object: a torn object, seen on fake-gcs-server as a
// 0-byte object after a Put cancelled once its headers were written
// (drivertest's put-canceled-mid-body, now and then under load;
// TestPutNeverTorn shows it every time). From the
// buffer the request is either whole or cut off before its closing
// boundary, which is not a complete multipart body (fake-gcs-server
// refuses it).
//
// The client library retries that request on transient errors when it is
// conditional (it has the body in its buffer), and so are Delete, Get and
// the other calls. A retry whose first attempt landed comes back 412 for a
// Put, which this driver reports as ErrOutcomeUnknown (driver.Op counts the
// requests sent), never ErrPrecondition; the caller (the lease) reads the
// object back. A Delete under IfMatch is idempotent to the library, so a
// retry whose first attempt did delete the object comes back 404, which
// this driver reports as ErrPrecondition. An unconditional Put is not
// retried.
//
// # Streaming writes
//
// Bucket is a driver.Streamer. PutStream sends a body shorter than one
// chunk as one conditional request, as Put does, and a longer one as a
// resumable upload (Writer.ChunkSize > 0 with the Writer's Conditions): the
// session is started with ifGenerationMatch (0 for IfAbsent), the chunks
// follow, and the service checks the precondition when the final request
// finalises the object. Nothing is visible before that; a refusal there is
// ErrPrecondition with the object left as it was.
//
// A chunk is StreamOptions.Size() rounded down to a multiple of 256 KiB,
// one 256 KiB granule less where needed so that the chunk buffer and the
// 256 KiB being handed over stay within Size() × Parallel() bytes. The
// chunks of a resumable upload are sent one after another (the protocol
// appends at the session's offset), so Concurrency only bounds memory: in
// effect it is 1.
//
// MayStart is called right before each request starts: before the bytes
// that complete a chunk are handed to the client library (the first
// chunk's also starts the session), and before the final request, once the
// previous chunk's request has ended; it is never called with a request of
// the upload in flight. Where it refuses, or ctx ends, r fails or a request
// fails, the Writer's context is cancelled: the requests in flight end, and
// PutStream returns once the client library's upload has ended. A failure
// before the final request means it is never sent, so nothing is
// committed; only a final request that fails in flight may have landed.
// The client library
// does not expose the session's URI, so the session cannot be deleted
// (DELETE on the URI); Cloud Storage discards it, with the chunks it
// received, when it expires a week after it started. The error's
// *driver.UploadError says whether a session had been started (Staged)
// and, as no abort could be sent (Aborted false, AbortErr nil), what
// became of it: its requests were cancelled, and it is left for Cloud
// Storage to discard (Upload, in its message).
//
// A refusal of the single request after the client library retried it is
// ErrOutcomeUnknown, as for Put. In a resumable upload only a 412
// conditionNotMet is ErrPrecondition: a retried final request of a session
// that was finalised is answered with the object, not a refusal, and a 404
// (the session is gone) is ErrOutcomeUnknown.
//
// # Listing
//
// Bucket is a driver.Lister: List pages through the client library's
// Objects iterator, 1,000 objects a page, with a plain prefix, in lexical
// order. An Object's Version is its generation in the form Get returns,
// Size its length and ModTime when it was last updated.
//
// # Closing
//
// A bucket opened by URL owns its client: close it with driver.Close when
// done. storage.Client.Close (v1.70.0) does not close the client's idle
// connections (it calls CloseIdleConnections on a transport wrapper that
// does not pass the call on), and every client has a connection pool of its
// own, so OpenURL builds the clients' HTTP transports itself (clones of
// http.DefaultTransport) and Close closes them all. Credentials on those
// transports are Application Default Credentials with the library's
// default scopes, detected once through cloud.google.com/go/auth as the
// library does; a client certificate (mTLS) is not used. A Bucket from New
// leaves its caller's client open, and its Close does nothing.
//
// # Control requests
//
// A bucket opened by URL has two clients, each on its own transport: one
// for PutStream and List, one for Get, Put and Delete (the lease's
// renewals and other small requests), so that a renewal never queues
// behind a streamed upload's chunks. Over HTTPS the client library speaks
// HTTP/2 to Cloud Storage, one TCP connection per transport, so a renewal
// on the chunks' transport would wait behind the chunk bytes already in
// that connection's send buffer whatever the pool allows
// (TestControlRequestsHaveTheirOwnPool shows the split with a pool bounded
// to one connection; fake-gcs-server is plain HTTP/1.1, so the HTTP/2 case
// is not measured here). A Bucket from New sends everything through the
// caller's client.
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
//   - fake-gcs-server v1.56.1 keeps a resumable session's ifGenerationMatch
//     from the request that starts it and checks it when the final request
//     finalises the object, as Cloud Storage does; it does not check it when
//     the session starts. TestStreamConditionAtCommit writes the key between
//     the two and sees the final request refused (412 conditionNotMet).
//     Earlier versions (before v1.55.0) ignored it on resumable uploads.
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
