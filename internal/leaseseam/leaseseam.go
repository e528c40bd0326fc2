// Package leaseseam lets the module's tests, the simulator and the command
// replace what a lease takes from the process, renew by hand, and read what
// a lease keeps to itself. Package lease sets its functions in init.
package leaseseam

import (
	"context"
	"io"
	"time"

	"github.com/mushroomdb/bucketlease/clock"
	"github.com/mushroomdb/bucketlease/driver"
)

// Seams replace what a lease takes from the process; a zero field keeps
// the default.
type Seams struct {
	Clock         clock.Clock         // default clock.System{}
	Getenv        func(string) string // reads lease.EnvConditional; default os.Getenv
	Rand          io.Reader           // acquired_at's random fraction; default crypto/rand.Reader
	RetryInterval time.Duration       // Keep's wait after a failed renewal; default TTL/15, at least 100 ms
}

// Facts are what a lease keeps to itself.
type Facts struct {
	TTL          time.Duration
	Version      driver.Version // of the lease object the lease last wrote
	RenewedAt    time.Time      // of the record the lease last wrote
	ServiceClock bool           // the driver reports the service's time
	Stamped      bool           // Lease.Bucket stamps every object's metadata
}

// The functions package lease provides: opts is a *lease.Options, l a
// *lease.Lease.
var (
	Set    func(opts any, s Seams)                // gives opts the seams s
	Renew  func(ctx context.Context, l any) error // one renewal of l
	Inside func(l any) Facts                      // l's facts
)

// With returns opts (a *lease.Options) after Set gave it s.
func With[O any](opts O, s Seams) O {
	Set(opts, s)
	return opts
}
