package driver

import (
	"context"
	"fmt"
	"io"
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

// Condition is the precondition of a Put or Delete. The zero value is an
// unconditional write; IfAbsent and IfMatch build the other two. It is one
// value rather than two flags so that it cannot contradict itself.
type Condition struct {
	kind    condKind
	version Version
}

// IfAbsent is the condition "the key does not exist" (If-None-Match: *).
func IfAbsent() Condition { return Condition{kind: condAbsent} }

// IfMatch is the condition "the key exists and its current version is v"
// (If-Match: v). IfMatch of the empty Version can never hold.
func IfMatch(v Version) Condition { return Condition{kind: condMatch, version: v} }

// Unconditional reports whether c is the zero Condition.
func (c Condition) Unconditional() bool { return c.kind == condNone }

// Absent reports whether c is IfAbsent.
func (c Condition) Absent() bool { return c.kind == condAbsent }

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
	// Metadata declares that a write (Put, PutStream) under
	// WithMetadata stores the metadata with the object atomically, in
	// the request that makes it visible, replacing the old version's, and
	// that Get reports the object's metadata (ReportMetadata) from the
	// response that carried its body. The zero value declares nothing: a
	// driver that does not declare it writes under WithMetadata without
	// the metadata, so a caller that needs it checks this first.
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
type Bucket interface {
	// Get returns the object's body and its version, both from one
	// response. The caller reads and closes the body. A missing key is
	// ErrNotExist.
	Get(ctx context.Context, key string) (io.ReadCloser, Version, error)

	// Put stores data under key in one request if cond holds, and returns
	// the version it created. A condition that does not hold is
	// ErrPrecondition, with the object left as it was. Where the client
	// library sent the write more than once and a later attempt was
	// refused, the outcome is unknown (the first attempt may have landed):
	// that is ErrOutcomeUnknown, never ErrPrecondition (Op.Fail does this).
	Put(ctx context.Context, key string, data []byte, cond Condition) (Version, error)

	// Delete removes key if cond holds. Deleting a missing key
	// unconditionally succeeds, as it does on S3; under IfMatch a missing key
	// is ErrPrecondition. IfAbsent makes no sense for a delete and is
	// ErrUnsupported, as is IfMatch where Capabilities().ConditionalDelete is
	// false: a driver never sends a condition its service would ignore.
	Delete(ctx context.Context, key string, cond Condition) error

	// Capabilities declares what the service guarantees.
	Capabilities() Capabilities
}

// FakeVersion returns a version that has the shape of v (same length, a hex
// digit where v has one, a decimal digit where v has one, other characters
// unchanged) but differs from it in every digit. A service therefore accepts
// it as well formed, and its refusal of IfMatch(FakeVersion(v)) is the
// service's own decision, not a parse error. The lease's probe and drivertest
// use it. For the empty Version it returns "0".
//
// A made-up version must also be one the object will not reach. That holds
// for ETags (content hashes) and GCS generations (microsecond timestamps),
// whose every digit it changes; a driver whose versions are small counters
// must scramble them, as the mem driver does. This is obligation 5 in
// docs/drivers.md, and drivertest's version-unguessable check fails
// first, naming the rule, for a driver that breaks it.
func FakeVersion(v Version) Version {
	if v == "" {
		return "0"
	}
	b := []byte(v)
	for i, c := range b {
		switch {
		case c >= '0' && c <= '8':
			b[i] = c + 1
		case c == '9':
			b[i] = '1' // never '0', which a generation number reads as "absent"
		case c >= 'a' && c <= 'e', c >= 'A' && c <= 'E':
			b[i] = c + 1
		case c == 'f':
			b[i] = 'a'
		case c == 'F':
			b[i] = 'A'
		}
	}
	return Version(b)
}

// ReadAll reads at most limit bytes of key and returns them with the
// version. A body longer than limit is an error wrapping ErrTooLarge, so a
// hostile or corrupt object cannot exhaust memory.
func ReadAll(ctx context.Context, b Bucket, key string, limit int64) ([]byte, Version, error) {
	rc, v, err := b.Get(ctx, key)
	if err != nil {
		return nil, "", err
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return nil, "", &OpError{Op: "get", Key: key, Err: err}
	}
	if int64(len(data)) > limit {
		return nil, v, &OpError{Op: "get", Key: key, Kind: ErrTooLarge,
			Err: fmt.Errorf("object is larger than %d bytes", limit)}
	}
	return data, v, nil
}
