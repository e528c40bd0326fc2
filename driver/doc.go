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
// A driver implements Bucket: its methods map the operations to one SDK's
// calls and the SDK's errors to the sentinels below, and nothing else. Each
// method starts with Begin, which enforces the contract's mechanical rules
// (an ended context, the key rule, Delete under IfAbsent, a condition the
// driver declares it cannot send, a version no service issues) and returns
// an *Op whose Context the SDK call uses and whose Fail builds every error.
//
// The obligations, each with the drivertest check that proves it (check
// names are API: see drivertest.Names):
//
//  1. Capabilities declares the exclusion the service gives; the zero value
//     declares none, and the lease refuses such a driver. A driver that
//     knows why it declares less than Conditional says so in Reason.
//     (capabilities-declared)
//  2. Get returns the body and the Version of one stored object from one
//     response, and never an empty Version: a response without one is an
//     error (as is a Put's), never an empty Version or a made-up one. A
//     missing key is ErrNotExist. (get-missing, get-version,
//     put-if-absent-new, version-header-missing, with
//     drivertest.Options.Transport)
//  3. Put sends one request and returns the Version it created. Under
//     IfAbsent it fails with ErrPrecondition if the key exists; under
//     IfMatch(v) it fails with ErrPrecondition unless the key exists with
//     version v, a missing key included. A refused write leaves the object
//     exactly as it was and is never reported as success or ErrNotExist,
//     whatever status the service used; the driver classifies by the
//     service's error code, not the status alone (Azure's 412 LeaseIdMissing
//     is not a refused condition). A body of any size is one request, never
//     a multipart or resumable upload the condition would not cover.
//     (put-if-absent-existing, put-if-match-current, put-if-match-stale,
//     put-if-match-made-up, put-if-match-missing, put-large-refused,
//     race-if-absent, cas-counter) The condition holds between every
//     writer of the bucket, not only between the goroutines of one
//     process: a mutex of the driver's own is no substitute for the
//     service's (or, for a local store, a lock the operating system
//     holds for every process). (exclusion-across-processes, with
//     drivertest.Options.URL)
//  4. IfMatch means "the current version is v": a version a service would
//     read as a wildcard or a list ("*", "\"*\"", "a,b", W/ tags, empty) is
//     never sent; it is ErrPrecondition (Begin does this, with
//     CheckVersion). (put-if-match-wildcard, and wildcard-never-sent,
//     which watches the wire through drivertest.Options.Transport)
//  5. Versions: opaque strings the driver normalises, so that a Version
//     from Put or Get works unchanged in the next IfMatch, unique per key,
//     and not predictable from an earlier one: FakeVersion(v) must never be
//     a version the object reaches, because the lease's probe writes
//     IfMatch(FakeVersion(v)) and expects a refusal. ETags and GCS
//     generations qualify; a driver whose versions are counters must
//     scramble them, as the mem driver does. (version-unguessable)
//  6. An outcome the driver cannot know is not a refusal: when the client
//     library sent a conditional write more than once (a retry after a
//     lost reply or a 5xx) and a later attempt was refused, the first may
//     have landed, so the error is ErrOutcomeUnknown, never ErrPrecondition
//     (Op.Fail does this for requests sent with Op.Context). A write whose
//     context ends leaves the old object or the whole new one, never part of
//     one, and its error matches the context, at every step of the write
//     (before and after any lock it takes, while the body is written,
//     before the step that makes it visible); once the write has returned,
//     nothing of it lands later. (put-retry-after-landed, with
//     drivertest.Options.Transport, put-canceled-mid-body,
//     context-canceled, put-canceled-settles)
//  7. Delete of a missing key succeeds. Delete honours IfMatch where
//     Capabilities says ConditionalDelete; a driver that cannot vouch that
//     its service honours the condition declares false, and Begin refuses a
//     conditional Delete with ErrUnsupported rather than sending it.
//     (delete-missing, delete-unconditional, delete-if-match-wrong,
//     delete-if-match-missing, delete-if-match-current,
//     delete-condition-refused)
//  8. A missing bucket (container, directory) is ErrBucketNotExist on every
//     operation, never ErrNotExist or ErrPrecondition: a lease must never
//     read as free because its bucket is missing. (missing-bucket, with
//     drivertest.Options.MissingBucket)
//  9. Refused credentials or permissions (HTTP 401 or 403, the SDK's
//     authentication errors) are ErrPermission. (wrong-credentials, with
//     drivertest.Options.WrongCredentials)
//  10. Keys follow CheckKey, so that two different keys never name one
//     object on any service (MinIO stores "/a/k" as "a/k", Azurite "a\k" as
//     "a/k"); a driver refuses, with ErrInvalidKey, any further key its
//     service would alias or its layout cannot hold. A key that is a prefix
//     of another ("db1" and "db1/LEASE") is stored on its own or refused
//     with ErrInvalidKey, reads as ErrNotExist when it is not stored, and
//     can be written once the longer key is gone. (key-prefix-of-key)
//  11. Every error keeps the service's own error in its chain (errors.As
//     reaches the SDK's type) and says the operation, the key and the
//     condition (OpError, built by Op.Fail); a cancelled context yields an
//     error for which errors.Is(err, context.Canceled) holds, whatever the
//     SDK made of it (WithContext, applied by Op.Fail). (context-canceled)
//  12. The lease works on the driver: acquire, refusal of a second
//     instance, renewal, takeover after a TTL, a fenced holder's release
//     that leaves its successor in place, a lost reply, and release; an
//     acquire and a renewal whose replies are lost on the wire, under the
//     driver's own client library and its retries, are recognised as the
//     lease's own. (lease-acquire, lease-second-refused, lease-renew,
//     lease-takeover, lease-fenced-release, lease-lost-reply,
//     lease-release, lease-lost-reply-wire, with
//     drivertest.Options.Transport)
//  13. A driver that streams (the optional Streamer; see PutStream) applies
//     the condition at the step that makes the object visible, and a
//     refused commit leaves the object as it was; racing streamed IfAbsent
//     writers get one winner whose whole body is stored; a body of unknown
//     length is stored byte for byte with the version Get returns;
//     StreamOptions.MayStart is called before each part and the commit, and
//     once it refuses nothing more is started; on any failure (a refused
//     commit, a cancelled context, MayStart) what was staged is aborted
//     before PutStream returns where the service has a call for it (S3's
//     AbortMultipartUpload, the file driver's staged file; Azure's
//     uncommitted blocks and a GCS resumable session have none and expire
//     after 7 days), the error (UploadError) says which happened, and no
//     upload is left pending where PendingLister can see one.
//     A driver without Streamer has these checks reported not applicable.
//     (stream-if-absent-existing, stream-if-match-stale,
//     stream-race-if-absent, stream-canceled-mid-body, stream-round-trip,
//     stream-may-start-refused) Only the body reader's own io.EOF ends a
//     body (read it with ReadPart): any other error of the reader, an
//     io.ErrUnexpectedEOF of its own (a cut HTTP body, gzip, tar) or one
//     returned together with bytes included, fails the write with an error
//     wrapping it and commits nothing, on the streamed path and the
//     single-request one alike; this check runs through PutStream, so on a
//     driver without Streamer too. (stream-reader-fails)
//  14. A driver that lists (the optional Lister; see List) yields every key
//     under a plain string prefix once, in lexical order, across the
//     service's pages, with its size, modification time and the version
//     in the form Get returns; keys with spaces, unicode and % come back
//     as written; a write just made is listed. A driver without Lister has
//     these checks reported not applicable. (list-paged,
//     list-prefix-of-key, list-odd-keys, list-read-your-write) A key
//     holding U+FFFE or U+FFFF, which XML 1.0 cannot carry (S3 lists keys
//     in XML: ask for encoding-type=url), is refused at Put or listed back
//     exactly. (list-nonchar-keys) A prefix that no valid key can start
//     with (see BeginList) yields ErrInvalidKey alone, from List and
//     ListPending, and is never sent. (list-invalid-prefix)
//  15. A driver that reports the service's time (optional; see "The
//     service's time" below) reports it for every Get and Put that got an
//     answer, a refusal and a missing key included: a Date near the
//     machine's clock, a Get's modification time no later than its Date
//     plus the Resolution, moving forward with each write, and a
//     Resolution from 0 to 2 s. A driver that reports nothing has these
//     checks skipped, saying so. (service-time, service-time-refused) On
//     it the lease refuses a contender whose clock is an hour off with
//     ErrClock, fences a holder whose clock runs ahead at its next
//     renewal, judges that holder's record by the service's clock, and
//     still takes a dead holder's lease within 1.5 TTL (plus the dates'
//     resolution).
//     (lease-clock-wrong-contender, lease-clock-holder-fenced,
//     lease-clock-takeover-in-time) An object's modification time is never
//     earlier than the moment it became visible, less the Resolution,
//     however long its streamed write was held between its last part and
//     its commit. (stream-dated-at-commit)
//  16. A driver that declares Capabilities.Metadata stores the metadata of
//     a write under WithMetadata (Put, PutStream of any length) with the
//     object in the request that makes it visible, never in a second
//     request before or after it, so that no reader sees the body without
//     its metadata; an overwrite replaces the metadata entirely, and a
//     refused write changes neither. Get reports the object's metadata
//     (ReportMetadata) from the response that carried the body, with
//     lowercase keys, an empty map for none. Metadata outside the portable
//     rule (Metadata.Validate) is ErrInvalidMetadata, with nothing
//     written (Begin does this). Where it declares ListMetadata, List
//     fills Object.Metadata; otherwise it leaves it nil. A driver that
//     does not declare Metadata writes without it and has these checks
//     skipped, saying so. The lease's fenced bucket stamps every object
//     it writes with its epoch and instance this way (lease.Stamp).
//     (metadata-roundtrip, metadata-streamed, metadata-refused-write,
//     metadata-listed, metadata-invalid, lease-stamps; and, on every
//     driver that reports the service's time, lease-epoch)
//
// # Rate limits
//
// A service that refuses a request for its rate (HTTP 429; Cloud
// Storage's rateLimitExceeded; S3's SlowDown, with 503; Azure's 503
// ServerBusy) is reported as ErrRateLimited, in an *OpError whose
// RetryAfter is the wait the service asked for (its Retry-After header),
// or 0 where it named none; callers read it with RetryAfter(err), through
// any wrapping. A rate-limited write was not applied: the service refused
// it before acting on it. That is what the services document, and an
// assumption no client can check (a proxy that forwarded the write and
// then answered 429 would break it), so ErrRateLimited is never reported
// for a write whose client library sent it more than once with an earlier
// attempt answered otherwise (that outcome stays unknown), and the s3, r2
// and gcs drivers do not let their client library send a rate-limited
// conditional write again: they return ErrRateLimited, and the caller
// sends the write again itself once the wait has passed. It is never
// ErrPrecondition: a 429 says nothing of the write's condition.
//
// Capabilities.KeyWriteInterval declares a limit the service enforces on
// writes to one key: R2 and Cloud Storage allow about one write per second
// to one object name (1 s, declared for the real services only: an r2 URL
// whose endpoint is not Cloudflare's, or a gs URL on an emulator, declares
// 0); the other drivers declare 0. The lease spaces
// its writes to one key within an acquire by it (its probes would
// otherwise trip the limit), and retries a rate-limited write after its
// RetryAfter, or the declared interval, or a second, whatever is declared.
//
// # The service's time
//
// The lease judges a record's age on the service's clock where it can,
// since every party that talks to one service shares that clock whatever
// its own machine's says. So a driver that can reports, through the
// call's context, what each answer said of the service's clock
// (ReportServiceTime, which a caller asks for with WithServiceTime): for
// every Get and Put that got an answer (success, refusal or missing key)
// the answer's Date, and for a successful Get the object's modification
// time, with the Resolution, how much earlier than the true time either
// may read. It goes through the context rather than an optional interface
// because it belongs to a response the call already makes, and every
// wrapper passes its context on (see WithServiceTime). Reporting is
// optional: a driver that reports nothing leaves the lease on the
// machine's clock. This module's drivers report:
//
//	driver  Date from                          Modified (Get) from            Resolution
//	s3, r2  the response's Date (SDK metadata,  Last-Modified                  1 s
//	        or the error's raw response)
//	minio   the response's Date, recorded by    Last-Modified                  1 s
//	        the client's transport*
//	gcs     the response's Date, recorded by    Last-Modified (the Reader's    1 s
//	        the client's transport*             Attrs.LastModified)
//	azure   the response's Date (captured       Last-Modified                  1 s
//	        response, retries included)
//	file    the machine's clock at the answer   the later of the file's mtime  2 s
//	        (nothing on a network file system)  and ctime (the commit's rename)
//	mem     Bucket.Now (default time.Now)       the write's Bucket.Now         0
//
// * a client the driver made (OpenURL, NewClient); a caller's client
// reports only if its transport is wrapped with the driver's
// ServiceTimeTransport. The table is kept in docs/drivers.md too.
//
// # Streaming a body
//
// A driver that streams does not write the part-upload loop: StreamParts
// does, once for every service, as Rust's object_store writes
// WriteMultipart once over each store's put_part, complete and abort. The
// loop is where a streamed write goes wrong (a part still in flight when
// the call returns, MayStart asked too late, a truncated body committed as
// whole, an abort that claims nothing landed after a lost commit), so it
// is written and tested once (upload_test.go, with steps in memory), and a
// fix reaches every driver. StreamParts reads the body in parts (ReadPart:
// only the reader's own io.EOF ends it), asks MayStart before each part and
// before the commit, stages up to the concurrency's parts at once, holds
// at most part size × concurrency bytes, and on any failure ends the parts
// in flight, waits for them, aborts within AbortTimeout whatever the
// caller's context, and returns an *OpError around an *UploadError that
// says what happened.
//
// A service supplies its UploadSteps, only the requests: Start (S3's
// CreateMultipartUpload), StagePart (UploadPart, Put Block, a piece handed
// to GCS's Writer), Commit under the condition (CompleteMultipartUpload,
// Put Block List, the final request), Abort (AbortMultipartUpload, or the
// account of what the service keeps where it has no such call), and Kind,
// which classifies their errors. Parts adapts the cut to the service (a
// largest part, a most parts, pieces for a client library that buffers a
// part itself); SinglePutter sends a body of one part as one request,
// Drainer waits for a part the client library sends on its own, and
// PendingLister lists what a failed write could have left, each with its
// Abort where the service has a call for it (lease.RemovePending uses it).
//
// A driver's URL opener is exported (OpenURL in each of this module's
// drivers), so that a custom Mux can host it, and refuses, with the rule in
// the message, a URL naming an invalid bucket or carrying credentials, an
// unknown parameter (Params), or anything else it cannot use.
//
// A driver registers a URL scheme in its package's init function with
// Register, as database/sql drivers do, and users open it with Open. It
// registers a Locator beside it (RegisterLocator), which says from the URL
// alone which bucket, prefix and endpoint it names: ParseURL parses a URL
// once into a Location that every layer reads (the driver, the messages,
// through Location.String, and the CLI's state directory, keyed by
// Location.Key, so that two spellings of one prefix share it).
//
// # Wrapping a Bucket
//
// Streamer, Lister, PendingLister and io.Closer are optional: found at run
// time by a type assertion, as database/sql finds a driver's optional
// interfaces, so that Bucket stays four methods. A Bucket that wraps
// another (to fence its writes, emulate conditions, bound its requests)
// would hide every one of them it did not forward by hand, and one it
// forwarded without the inner having it would claim an ability the driver
// lacks (the lease proves a streamed commit only where there is a
// Streamer). So a wrapper implements the four methods and overrides only
// the optional methods it must change, and Wrap composes it with the
// wrapped bucket: the result has exactly the wrapped bucket's optional
// interfaces, the wrapper's method where it has one and the wrapped one's
// otherwise, and a Close that closes the wrapped bucket unless the wrapper
// says otherwise. gocloud.dev/blob avoids the question by making every
// method mandatory with an "unimplemented" error, and net/http's
// ResponseWriter wrappers answer it as Wrap does, with a struct type for
// each combination (compose); a new optional interface is added to
// Optional and compose, and the tests of Wrap and of every wrapper in the
// module (internal/testsupport/wrapcheck) fail until it is.
//
// # Exclusion
//
// Capabilities.Exclusion is the driver's declaration of how strongly the
// service enforces preconditions. The lease does not take it on trust: it
// probes the service at every acquire, and drivertest verifies the
// declaration.
package driver
