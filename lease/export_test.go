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

// Stamp is stamped, for the tests.
func (l *Lease) Stamp() (admin.Stamp, bool) { return l.stamped() }

// TTL returns the lease's TTL, for the tests.
func (l *Lease) TTL() time.Duration { return l.s.ttl }

// Prefix returns the lease's prefix without trailing slashes, for the tests.
func (l *Lease) Prefix() string { return l.prefix }

// ServiceClock is serviceClock, for the tests.
func (l *Lease) ServiceClock() (admin.ServiceClock, bool) { return l.serviceClock() }

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
