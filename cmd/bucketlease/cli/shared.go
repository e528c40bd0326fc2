package cli

import (
	"time"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/bounded"
	"github.com/mushroomdb/bucketlease/driver"
)

// withDeadlines is bounded.New, under the name the put commands call.
func withDeadlines(b driver.Bucket, d time.Duration, loc *driver.Location, bound string) driver.Bucket {
	return bounded.New(b, d, loc, bound)
}

// requestTimeout is the bound on each of hold's requests: a third of the
// TTL. A renewal that takes longer has missed its turn anyway (the next is
// due), and the fence, two thirds of a TTL after the last renewal, leaves
// room for two such attempts.
func requestTimeout(ttl time.Duration) time.Duration { return ttl / 3 }

// defaultTimeout is show's and break's default --timeout.
const defaultTimeout = 30 * time.Second
