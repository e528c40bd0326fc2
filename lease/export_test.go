package lease

import (
	"context"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/internal/leaseseam"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// Renew is renew, for the tests.
func (l *Lease) Renew(ctx context.Context) error { return l.renew(ctx) }

// Version is lastVersion, for the tests.
func (l *Lease) Version() driver.Version { return l.lastVersion() }

// Record is lastRecord, for the tests.
func (l *Lease) Record() admin.Record { return l.lastRecord() }

// Stamp returns the stamp Bucket writes, and whether it writes one (the
// driver keeps metadata), for the tests.
func (l *Lease) Stamp() (admin.Stamp, bool) { return l.stamp, l.caps.Metadata }

// TTL returns the lease's TTL, for the tests.
func (l *Lease) TTL() time.Duration { return l.s.ttl }

// Prefix returns the lease's prefix without trailing slashes, for the tests.
func (l *Lease) Prefix() string { return l.prefix }

// ServiceClock returns the service's clock at the lease's latest read or
// renewal, and false when its driver reports none, for the tests.
func (l *Lease) ServiceClock() (admin.ServiceClock, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.svc == nil {
		return admin.ServiceClock{}, false
	}
	return *l.svc, true
}

// Watch returns the contender's watch of a suspect record, for the tests.
func (c *Contender) Watch() suspectWatch { return c.watch }

// Version returns the suspect version being watched, or "".
func (w suspectWatch) Version() driver.Version { return w.version }

// Since returns when, on the contender's monotonic clock, the watched
// version was first seen, and whether one is being watched.
func (w suspectWatch) Since() (time.Duration, bool) { return w.since, w.seen }

// Seams returns the options' seams, for the tests to set.
func (o *Options) Seams() *leaseseam.Seams { return &o.seams }

// NewInstanceID is newInstanceID, for the tests.
func NewInstanceID() string { return newInstanceID() }
