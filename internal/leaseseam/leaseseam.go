// Package leaseseam lets the module's tests, the simulator and the command
// replace what a lease takes from the process (clock, environment,
// randomness, retry pacing), renew by hand, and read what a lease keeps to
// itself. Package lease sets its functions when it is initialised.
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
	// Clock is the source of time. Default clock.System{}.
	Clock clock.Clock
	// Getenv reads lease.EnvConditional. Default os.Getenv.
	Getenv func(string) string
	// Rand is the source of the random fraction of a second in each
	// record's acquired_at. Default crypto/rand.Reader.
	Rand io.Reader
	// RetryInterval is how long Keep waits after a failed renewal before
	// it tries again. Default TTL/15, at least 100 ms.
	RetryInterval time.Duration
}

// Facts are what a lease keeps to itself.
type Facts struct {
	TTL       time.Duration  // the lease's TTL
	Version   driver.Version // of the lease object the lease last wrote
	RenewedAt time.Time      // of the record the lease last wrote
	// ServiceClock: the driver reports the service's time, and the
	// lease judges records by it.
	ServiceClock bool
	// Stamped: Lease.Bucket stamps every object's metadata.
	Stamped bool
}

// The functions package lease provides: opts is a *lease.Options, l a
// *lease.Lease.
var (
	// Set gives opts the seams s.
	Set func(opts any, s Seams)
	// Renew makes one renewal of l (what Keep does every TTL/3).
	Renew func(ctx context.Context, l any) error
	// Inside returns l's facts.
	Inside func(l any) Facts
)

// With returns opts (a *lease.Options) after Set gave it s.
func With[O any](opts O, s Seams) O {
	Set(opts, s)
	return opts
}
