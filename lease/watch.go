package lease

import (
	"time"

	"github.com/mushroomdb/bucketlease/driver"
)

// Watch is what a contender has seen of a suspect foreign lease across
// attempts: which version, and since when on its own monotonic clock. A
// suspect record seen unchanged for one of the contender's TTLs is taken
// over.
type Watch struct {
	version driver.Version
	since   time.Duration
	seen    bool
}

// Version returns the suspect version being watched, or "".
func (w Watch) Version() driver.Version { return w.version }

// Since returns when, on the contender's monotonic clock, the watched
// version was first seen, and whether one is being watched.
func (w Watch) Since() (time.Duration, bool) { return w.since, w.seen }

// observe records that version v is suspect at monotonic time now and
// returns how long it has been seen unchanged.
func (w *Watch) observe(v driver.Version, now time.Duration) time.Duration {
	if !w.seen || w.version != v {
		*w = Watch{version: v, since: now, seen: true}
	}
	return now - w.since
}
