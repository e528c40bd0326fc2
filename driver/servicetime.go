package driver

import (
	"context"
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

// serviceTimeKey is the context key of WithServiceTime's callback.
type serviceTimeKey struct{}

// WithServiceTime returns a context under which a driver that knows its
// service's clock calls report with what the response to each call said
// (ReportServiceTime). report may be called from any goroutine, and more
// than once for one call that made more than one request: the last call
// is the response the driver returned. report must return quickly and
// must not call the bucket: a driver may call it under its own locks. A
// nil report hides the service's time from callers further out, as a
// driver without the capability would.
//
// The time comes through the context, as net/http/httptrace's hooks do,
// rather than through a method of an optional interface, for two reasons.
// It belongs to a response the call already makes (Get's, Put's), so it
// costs no request and needs no second method beside each of Bucket's.
// And every wrapper of a Bucket (the lease's fenced bucket, besteffort,
// the CLI's deadlines) passes its context on, so the report reaches the
// caller through any of them without one more optional interface for Wrap
// to compose. A driver that reports nothing leaves the caller on its own
// machine's clock: the lease then says "clocks: assumed synchronised".
func WithServiceTime(ctx context.Context, report func(ServiceTime)) context.Context {
	return context.WithValue(ctx, serviceTimeKey{}, report)
}

// ReportServiceTime is for drivers: it hands t to the callback of
// WithServiceTime under ctx, if there is one. A driver whose service
// states its time calls it once for every Get and Put that got an answer
// (success or refusal) with the Date of that answer, and for a Get with
// the object's modification time, before it returns. It does nothing for
// a zero Date.
func ReportServiceTime(ctx context.Context, t ServiceTime) {
	if t.Date.IsZero() {
		return
	}
	if report, ok := ctx.Value(serviceTimeKey{}).(func(ServiceTime)); ok && report != nil {
		report(t)
	}
}
