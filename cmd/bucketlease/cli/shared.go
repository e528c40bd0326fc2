package cli

import (
	"time"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/holding"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/report"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/internal/location"
	"github.com/mushroomdb/bucketlease/lease"
)

// requestTimeout is the bound on each of hold's requests: a third of the
// TTL. A renewal that takes longer has missed its turn anyway (the next is
// due), and the fence, two thirds of a TTL after the last renewal, leaves
// room for two such attempts.
func requestTimeout(ttl time.Duration) time.Duration { return ttl / 3 }

// defaultTimeout is show's and break's default --timeout.
const defaultTimeout = 30 * time.Second

// releaseAfter releases the lease after result (holding.Release), with
// the driver's hints on a failure.
func releaseAfter(l *lease.Lease, loc *location.Location, b driver.Bucket, prefix string, p *report.Printer, result error) error {
	return holding.Release(l, loc, b, prefix, p, result, func(err error) error { return explain(loc, err) })
}
