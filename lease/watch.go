package lease

import (
	"time"

	"github.com/mushroomdb/bucketlease/driver"
)

// suspectWatch is what a contender has seen of a suspect foreign lease across
// attempts: which version, and since when on its own monotonic clock. A
// suspect record seen unchanged for one of the contender's TTLs is taken
// over.
type suspectWatch struct {
	version driver.Version
	since   time.Duration
	seen    bool
}

// observe records that version v is suspect at monotonic time now and
// returns how long it has been seen unchanged.
func (w *suspectWatch) observe(v driver.Version, now time.Duration) time.Duration {
	if !w.seen || w.version != v {
		*w = suspectWatch{version: v, since: now, seen: true}
	}
	return now - w.since
}
