package driver

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Metadata is an object's user metadata: short names and values stored
// with the object, set atomically with its body and read back with it
// (S3's x-amz-meta-* headers, Cloud Storage's metadata, Azure Blob's
// metadata, an extended attribute on the file driver). The lease stamps
// every object written through its fenced bucket with the holder's epoch
// and instance in it, so that a reader can tell a late write.
//
// A Metadata is portable only within the rule Validate checks, the
// intersection of what every service keeps as it was given:
//
//   - a key is 1 to MaxMetadataKeyLen characters, lowercase ASCII letters
//     and digits only, starting with a letter: S3 and MinIO send keys as
//     HTTP header names, which HTTP treats case-insensitively and MinIO
//     returns in canonical case; Azure's must be C# identifiers, compared
//     without case; proxies (nginx by default) drop header names with an
//     underscore; and so no case, no '-', no '_';
//   - a value is printable ASCII (0x20 to 0x7e), 1 to
//     MaxMetadataValueLen bytes, without a leading or trailing space: a
//     header value that no service encodes, trims or folds (HTTP trims
//     the spaces around a header value, and a client may send an empty
//     one as no header at all);
//   - all keys and values together are at most MaxMetadataSize bytes, far
//     below S3's 2 KiB and Azure's 8 KiB.
//
// Drivers report a Get's metadata with lowercase keys whatever case the
// service returned them in.
type Metadata map[string]string

// The limits of Metadata's rule (Validate).
const (
	MaxMetadataKeyLen   = 40
	MaxMetadataValueLen = 256
	MaxMetadataSize     = 1024
)

// Validate reports whether m follows the portable rule (see Metadata). Its
// error wraps ErrInvalidMetadata and names the first offending key, in
// sorted order, and why. A nil or empty Metadata is valid.
func (m Metadata) Validate() error {
	total := 0
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		total += len(k) + len(v)
		if why := metadataKeyProblem(k); why != "" {
			return fmt.Errorf("%w: key %q %s; a key is 1 to %d lowercase ASCII letters and digits, starting with a letter",
				ErrInvalidMetadata, clipKey(k), why, MaxMetadataKeyLen)
		}
		if why := metadataValueProblem(v); why != "" {
			return fmt.Errorf("%w: the value of %q %s; a value is 1 to %d bytes of printable ASCII (0x20 to 0x7e), without a leading or trailing space",
				ErrInvalidMetadata, k, why, MaxMetadataValueLen)
		}
	}
	if total > MaxMetadataSize {
		return fmt.Errorf("%w: its keys and values come to %d bytes, more than %d", ErrInvalidMetadata, total, MaxMetadataSize)
	}
	return nil
}

// metadataKeyProblem explains why k is not a portable metadata key, or is "".
func metadataKeyProblem(k string) string {
	switch {
	case k == "":
		return "is empty"
	case len(k) > MaxMetadataKeyLen:
		return fmt.Sprintf("is %d characters long, more than %d", len(k), MaxMetadataKeyLen)
	case k[0] < 'a' || k[0] > 'z':
		return "does not start with a lowercase letter"
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return fmt.Sprintf("holds %q, which is not a lowercase ASCII letter or digit", string(rune(c)))
		}
	}
	return ""
}

// metadataValueProblem explains why v is not a portable metadata value, or
// is "".
func metadataValueProblem(v string) string {
	switch {
	case v == "":
		return "is empty, which some clients send as no header at all"
	case len(v) > MaxMetadataValueLen:
		return fmt.Sprintf("is %d bytes long, more than %d", len(v), MaxMetadataValueLen)
	case strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r > 0x7e }):
		return "holds a byte outside printable ASCII"
	case strings.HasPrefix(v, " ") || strings.HasSuffix(v, " "):
		return "has a leading or trailing space, which HTTP trims"
	}
	return ""
}

// Clone returns a copy of m, or nil for a nil m.
func (m Metadata) Clone() Metadata { return maps.Clone(m) }

// Equal reports whether m and o hold the same keys and values; nil and
// empty are equal.
func (m Metadata) Equal(o Metadata) bool { return maps.Equal(m, o) }

// String renders m with its keys sorted, for messages.
func (m Metadata) String() string {
	if m == nil {
		return "<nil>"
	}
	var sb strings.Builder
	sb.WriteString("{")
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			sb.WriteString(" ")
		}
		fmt.Fprintf(&sb, "%s=%q", k, m[k])
	}
	sb.WriteString("}")
	return sb.String()
}

// metadataWriteKey and metadataReportKey are the context keys of
// WithMetadata and WithMetadataReport.
type (
	metadataWriteKey  struct{}
	metadataReportKey struct{}
)

// WithMetadata returns a context under which a write (Put, a Streamer's
// PutStream, and PutStream's fallback, which calls Put) by a driver whose
// Capabilities declare Metadata stores md with the object, atomically: in
// the same request that makes the object visible (S3's PutObject or
// CreateMultipartUpload, Cloud Storage's upload, Azure's Put Blob or Put
// Block List, the file driver's temporary file before its rename), so
// that no reader ever sees the object without it, or with the metadata of
// the version it replaced. An overwrite replaces the metadata entirely:
// keys of the old version are not kept. A refused write changes neither
// body nor metadata. Invalid md (Validate) is refused by such a driver
// with an error wrapping ErrInvalidMetadata, and nothing is written (Begin
// does this). md is copied; a nil md writes no metadata, as a context
// without WithMetadata does.
//
// It goes through the context, as WithServiceTime does, for the same
// reasons: the metadata belongs to a request the write already makes, so
// it needs no second method beside Put and PutStream; and every wrapper of
// a Bucket (the lease's fenced bucket, besteffort, the CLI's deadlines)
// passes its context on, so it reaches the driver through any of them
// without one more optional interface for Wrap to compose.
//
// The danger of a context value is that nothing makes a driver read it: a
// driver that does not know of it (one written before it existed, a third
// party's) writes the object unstamped and reports success. So a driver
// declares that it reads it (Capabilities.Metadata, whose zero value
// declares nothing, so that an undeclaring driver is never trusted),
// drivertest's metadata checks prove the declaration, and a caller that
// needs the metadata stored checks Capabilities first: a driver that does
// not declare Metadata writes the object without it.
func WithMetadata(ctx context.Context, md Metadata) context.Context {
	return context.WithValue(ctx, metadataWriteKey{}, md.Clone())
}

// MetadataToWrite is for drivers: the metadata a write under ctx must
// store with the object (WithMetadata), or nil for none. A driver that
// declares Capabilities.Metadata sends it in the request that makes the
// object visible, and sends none (so that an overwrite drops the old
// version's) when it is nil or empty. Begin has already refused invalid
// metadata for such a driver. The map is the driver's to read, not to
// change.
func MetadataToWrite(ctx context.Context) Metadata {
	md, _ := ctx.Value(metadataWriteKey{}).(Metadata)
	return md
}

// WithMetadataReport returns a context under which a Get by a driver that
// declares Capabilities.Metadata calls report with the object's user
// metadata (ReportMetadata), read from the same response as the body and
// the version: an empty, non-nil Metadata for an object stored with none.
// report is called once for a Get that succeeded, before Get returns, and
// not for a Get that failed. It must return quickly and must not call the
// bucket. A nil report hides the metadata from callers further out. It
// goes through the context for the reasons given at WithMetadata.
func WithMetadataReport(ctx context.Context, report func(Metadata)) context.Context {
	return context.WithValue(ctx, metadataReportKey{}, report)
}

// ReportMetadata is for drivers: it hands md to the callback of
// WithMetadataReport under ctx, if there is one. A driver that declares
// Capabilities.Metadata calls it for every Get that succeeded, with the
// object's user metadata from the response that carried the body, its
// keys in lowercase; a nil md is reported as an empty one.
func ReportMetadata(ctx context.Context, md Metadata) {
	report, ok := ctx.Value(metadataReportKey{}).(func(Metadata))
	if !ok || report == nil {
		return
	}
	if md == nil {
		md = Metadata{}
	}
	report(md)
}

// MetadataWanted is for drivers: it reports whether a Get under ctx has a
// WithMetadataReport callback to report to. A driver whose service's read
// response may lack the metadata, so that reporting it takes a further
// request (Cloud Storage's JSON API), makes that request only when it is
// wanted.
func MetadataWanted(ctx context.Context) bool {
	report, ok := ctx.Value(metadataReportKey{}).(func(Metadata))
	return ok && report != nil
}

// LowerMetadata returns the user metadata of a service's response (an SDK's
// map, whose keys may come back in the case the service chose, canonical
// HTTP case on MinIO, as set on Azure) with lowercase keys, and an empty,
// non-nil Metadata for none. Drivers pass what they report through it.
func LowerMetadata(m map[string]string) Metadata {
	out := make(Metadata, len(m))
	for k, v := range m {
		out[strings.ToLower(k)] = v
	}
	return out
}
