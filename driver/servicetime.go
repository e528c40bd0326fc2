package driver

import (
	"time"
)

// ServiceTime is what one response said about the service's clock: when
// the service answered and, for a Get, when the object was last written,
// both read from the service's own clock. Every party that talks to one
// service shares that clock, whatever its machine's clock says, so the
// lease can judge a record's age on it (see the lease package's "What it
// proves at run time").
type ServiceTime struct {
	// Date is the service's time of the response (HTTP Date), truncated
	// to Resolution.
	Date time.Time
	// Modified is the object's modification time (Last-Modified; a
	// file's mtime) for a Get, truncated to Resolution; zero for other
	// calls.
	Modified time.Time
	// Resolution is how much earlier than the true time Date and Modified
	// may read: a second for HTTP dates (S3, R2, MinIO, Azure, and GCS,
	// whose read response carries Last-Modified but not the object's
	// millisecond "updated"), two seconds for a file's mtime (FAT's
	// granularity; see the file driver), zero for a clock read exactly
	// (mem). docs/drivers.md ("The service's time") tabulates what each driver reports.
	Resolution time.Duration
}
