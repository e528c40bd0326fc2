package driver

import (
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
//   - a key is 1 to 40 characters, lowercase ASCII letters
//     and digits only, starting with a letter: S3 and MinIO send keys as
//     HTTP header names, which HTTP treats case-insensitively and MinIO
//     returns in canonical case; Azure's must be C# identifiers, compared
//     without case; proxies (nginx by default) drop header names with an
//     underscore; and so no case, no '-', no '_';
//   - a value is printable ASCII (0x20 to 0x7e), 1 to
//     256 bytes, without a leading or trailing space: a
//     header value that no service encodes, trims or folds (HTTP trims
//     the spaces around a header value, and a client may send an empty
//     one as no header at all);
//   - all keys and values together are at most 1024 bytes, far
//     below S3's 2 KiB and Azure's 8 KiB.
//
// Drivers report a Get's metadata with lowercase keys whatever case the
// service returned them in.
type Metadata map[string]string

// The limits of Metadata's rule (Validate), as its documentation states them.
const (
	maxMetadataKeyLen   = 40
	maxMetadataValueLen = 256
	maxMetadataSize     = 1024
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
				ErrInvalidMetadata, clipKey(k), why, maxMetadataKeyLen)
		}
		if why := metadataValueProblem(v); why != "" {
			return fmt.Errorf("%w: the value of %q %s; a value is 1 to %d bytes of printable ASCII (0x20 to 0x7e), without a leading or trailing space",
				ErrInvalidMetadata, k, why, maxMetadataValueLen)
		}
	}
	if total > maxMetadataSize {
		return fmt.Errorf("%w: its keys and values come to %d bytes, more than %d", ErrInvalidMetadata, total, maxMetadataSize)
	}
	return nil
}

// metadataKeyProblem explains why k is not a portable metadata key, or is "".
func metadataKeyProblem(k string) string {
	switch {
	case k == "":
		return "is empty"
	case len(k) > maxMetadataKeyLen:
		return fmt.Sprintf("is %d characters long, more than %d", len(k), maxMetadataKeyLen)
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
	case len(v) > maxMetadataValueLen:
		return fmt.Sprintf("is %d bytes long, more than %d", len(v), maxMetadataValueLen)
	case strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r > 0x7e }):
		return "holds a byte outside printable ASCII"
	case strings.HasPrefix(v, " ") || strings.HasSuffix(v, " "):
		return "has a leading or trailing space, which HTTP trims"
	}
	return ""
}
