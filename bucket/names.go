package bucket

import "github.com/mushroomdb/bucketlease/internal/objects"

import (
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/internal/location"
)

// Condition is what a write expects of the object it replaces: IfAbsent,
// IfMatch, or the zero Condition for nothing.
type Condition = driver.Condition

// IfAbsent is the condition that the key does not exist (If-None-Match: *).
func IfAbsent() Condition { return driver.IfAbsent() }

// IfMatch is the condition that the key holds version v (If-Match).
func IfMatch(v Version) Condition { return driver.IfMatch(v) }

// Version names one write of an object (an ETag, a generation).
type Version = driver.Version

// Metadata is an object's user metadata: lowercase ASCII keys and printable
// values, stored with the object atomically.
type Metadata = driver.Metadata

// Object describes one listed object.
type Object = driver.Object

// Exclusion is how strongly a store enforces a write's condition.
type Exclusion = driver.Exclusion

// The exclusions a store gives.
const (
	// Conditional: two writers racing on one key cannot both win.
	Conditional = driver.Conditional
	// BestEffort: the condition is checked by a read before the write; two
	// writers that race can both win.
	BestEffort = driver.BestEffort
	// NoExclusion: the store ignores conditions.
	NoExclusion = driver.NoExclusion
)

// The errors a caller acts on, checked with errors.Is. They are the values
// drivers report, so a check works whichever package the error came
// through.
var (
	ErrNotExist        = driver.ErrNotExist        // no such key
	ErrPrecondition    = driver.ErrPrecondition    // the write's condition did not hold; nothing was written
	ErrOutcomeUnknown  = driver.ErrOutcomeUnknown  // the write may have landed: read the key back
	ErrUnsupported     = driver.ErrUnsupported     // the store cannot do what was asked
	ErrTooLarge        = objects.ErrTooLarge       // longer than the reader's limit
	ErrInvalidKey      = driver.ErrInvalidKey      // a key outside the portable rule
	ErrPermission      = driver.ErrPermission      // the credentials do not allow it
	ErrBucketNotExist  = driver.ErrBucketNotExist  // the bucket itself is missing
	ErrRateLimited     = driver.ErrRateLimited     // the store asked to slow down
	ErrInvalidMetadata = driver.ErrInvalidMetadata // metadata outside the portable rule; nothing was written
	ErrUnknownScheme   = location.ErrUnknownScheme // Open: no driver the program imports has the URL's scheme
)
