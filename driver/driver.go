package driver

import (
	"context"
	"io"
	"iter"
	"strconv"
	"time"
)

// Version names one stored version of one object: an ETag on S3, R2, MinIO
// and Azure, a generation number on GCS. It is opaque to callers; the empty
// Version means "no version".
type Version string

// condKind says which precondition a Condition carries.
type condKind uint8

const (
	condNone condKind = iota
	condAbsent
	condMatch
)

// Condition is the precondition of a Put or Delete: the zero Condition
// (none), IfAbsent or IfMatch. Conditions compare with ==.
type Condition struct {
	kind    condKind
	version Version
}

// IfAbsent is the condition "the key does not exist" (If-None-Match: *).
func IfAbsent() Condition { return Condition{kind: condAbsent} }

// IfMatch is the condition "the key exists and its current version is v"
// (If-Match: v). IfMatch of the empty Version can never hold.
func IfMatch(v Version) Condition { return Condition{kind: condMatch, version: v} }

// Match returns the version c requires and true if c is IfMatch.
func (c Condition) Match() (Version, bool) { return c.version, c.kind == condMatch }

// String renders c the way an HTTP request would carry it.
func (c Condition) String() string {
	switch c.kind {
	case condAbsent:
		return "If-None-Match: *"
	case condMatch:
		return "If-Match: " + strconv.Quote(string(c.version))
	default:
		return "unconditional"
	}
}

// Exclusion is how strongly a service keeps a second writer out.
type Exclusion int

const (
	// NoExclusion: the service ignores preconditions. The lease refuses to
	// run on it. It is the zero value, so a driver that declares nothing
	// is not trusted.
	NoExclusion Exclusion = iota
	// BestEffort: preconditions are emulated by a read followed by an
	// unconditional write; two writers that race can both pass.
	BestEffort
	// Conditional: the service enforces IfAbsent and IfMatch atomically.
	Conditional
)

// String returns "none", "best-effort" or "conditional".
func (e Exclusion) String() string {
	switch e {
	case NoExclusion:
		return "none"
	case BestEffort:
		return "best-effort"
	case Conditional:
		return "conditional"
	default:
		return "Exclusion(" + strconv.Itoa(int(e)) + ")"
	}
}

// Capabilities is what a driver declares about its service.
type Capabilities struct {
	// Exclusion is how strongly the service enforces preconditions on Put.
	Exclusion Exclusion
	// ConditionalDelete reports whether the service honours IfMatch on
	// Delete. Where it is false, Delete refuses any condition with
	// ErrUnsupported. The lease never deletes (it releases by an IfMatch
	// overwrite), so this is reported by drivertest and the probe only.
	ConditionalDelete bool
	// Reason says, for a human, why Exclusion is weaker than Conditional
	// where the driver knows (for example "the directory is on an NFS file
	// system, where flock(2) may not exclude other machines; add
	// ?trust_network_flock=true if ..."), and what the user can do. It is
	// empty otherwise. The lease prints it when it refuses the bucket.
	Reason string
	// KeyWriteInterval is the minimum spacing between two writes to one
	// key that the service enforces, answering a write that comes sooner
	// with ErrRateLimited: a second on Cloudflare R2 and Google Cloud
	// Storage (about one write per second to one object name), 0 where
	// the service declares no such limit. The lease spaces its writes to
	// one key within an acquire by it, so that its own probes do not trip
	// the limit; a write refused for its rate is retried whatever is
	// declared here.
	KeyWriteInterval time.Duration
	// Metadata declares that a write (Put, PutStream) stores
	// PutOptions.Metadata with the object atomically, in the request that
	// makes it visible, replacing the old version's, and that Get under
	// GetOptions.Metadata returns the metadata of the version whose body
	// it returns. The zero value declares nothing: a driver that does not
	// declare it writes without the metadata, so a caller that needs it
	// checks this first.
	// (metadata-roundtrip, metadata-streamed, metadata-refused-write,
	// metadata-invalid)
	Metadata bool
	// ListMetadata declares that List fills Object.Metadata, where the
	// service's listing carries it (Cloud Storage, Azure with
	// include=metadata, mem, file). It is false where that would take a
	// request per object (S3's ListObjectsV2 returns no user metadata):
	// such a caller reads each object it needs with Get. (metadata-listed)
	ListMetadata bool
}

// Bucket is one bucket (or container) of an object store. Keys are full
// object names within it; the prefix returned by Open is the caller's to
// apply. A Bucket is safe for concurrent use.
//
// What a call sends beyond the key (a condition, metadata) is in its
// options, and what it learned (the version, the metadata, the service's
// time) is in its Attrs. Get and Put return their Attrs with an error too:
// its Time is set whenever the service answered, a refusal included.
type Bucket interface {
	// Get returns the object's body and its Attrs, from one response. The
	// caller reads and closes the body. A missing key is ErrNotExist.
	Get(ctx context.Context, key string, opts GetOptions) (io.ReadCloser, Attrs, error)

	// Put stores data under key in one request if opts.If holds, with
	// opts.Metadata where Capabilities().Metadata, and returns the Attrs
	// of the version it created. A condition that does not hold is
	// ErrPrecondition, with the object left as it was. Where the client
	// library sent the write more than once and a later attempt was
	// refused, the outcome is unknown (the first attempt may have landed):
	// that is ErrOutcomeUnknown, never ErrPrecondition (Op.Fail does this).
	Put(ctx context.Context, key string, data []byte, opts PutOptions) (Attrs, error)

	// PutStream stores the body read from r until io.EOF under key, in
	// parts, if opts.If holds at the step that makes the object visible
	// (S3's CompleteMultipartUpload, the final request of a GCS resumable
	// upload, Azure's Put Block List, the file driver's rename). It holds
	// at most s.Size() × s.Parallel() bytes of the body at once. A
	// condition that does not hold at commit is ErrPrecondition, with the
	// object left as it was.
	//
	// On any failure (ctx ended, r failed, s.MayStart refused, a part or
	// the commit failed or was refused) it aborts what it had staged before
	// it returns, and its error (a multipart.UploadError) says whether the abort
	// succeeded. It returns only once no request of the upload is still in
	// flight. The body is read in the caller's goroutine, and ctx is looked
	// at before every Read. A driver whose service cannot stage parts
	// delegates to PutWhole; one that can gives its requests to multipart.Stream.
	PutStream(ctx context.Context, key string, r io.Reader, opts PutOptions, s *StreamOptions) (Attrs, error)

	// Delete removes key if cond holds. Deleting a missing key
	// unconditionally succeeds, as it does on S3; under IfMatch a missing key
	// is ErrPrecondition. IfAbsent makes no sense for a delete and is
	// ErrUnsupported, as is IfMatch where Capabilities().ConditionalDelete is
	// false: a driver never sends a condition its service would ignore.
	Delete(ctx context.Context, key string, cond Condition) error

	// List yields every object whose key starts with prefix (a plain
	// string prefix: "db1/c" matches "db1/chunks/1" and "db1/c"), in
	// lexical order of key, paging through the service as the caller
	// iterates. A failure is yielded once, as the error of the last pair;
	// ctx is honoured between and within pages. Listing builds it.
	List(ctx context.Context, prefix string) iter.Seq2[Object, error]

	// Capabilities declares what the service guarantees.
	Capabilities() Capabilities
}

// GetOptions is what a Get asks for beyond the body.
type GetOptions struct {
	// Metadata asks for the object's metadata in Attrs.Metadata, read
	// from the version whose body is returned. Without it a driver may
	// leave Attrs.Metadata nil (Cloud Storage's read response need not
	// carry it, and reading it is a second request).
	Metadata bool
}

// PutOptions is what a write sends beyond the key and the body.
type PutOptions struct {
	// If is the write's condition: IfAbsent, IfMatch, or the zero
	// Condition for none.
	If Condition
	// Metadata is stored with the object, atomically, where the driver
	// declares Capabilities.Metadata; it replaces the old version's. Nil
	// writes none. An invalid Metadata (see Metadata.Validate) is refused
	// with ErrInvalidMetadata before anything is sent.
	Metadata Metadata
}

// Attrs is what one call learned about an object and the service.
type Attrs struct {
	// Version is the version read or created; empty after a failure.
	Version Version
	// Metadata is the object's metadata, with lowercase keys, from a Get
	// under GetOptions.Metadata by a driver that declares
	// Capabilities.Metadata: empty and non-nil for an object stored with
	// none. It is nil otherwise.
	Metadata Metadata
	// Time is what the answer said about the service's clock; zero where
	// the driver reports none.
	Time ServiceTime
}
