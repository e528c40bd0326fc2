// Package settle judges what reading an object back proves of a write
// whose request the client library sent more than once, so that a driver
// can tell a refusal of its own earlier attempt from a refusal of the
// write.
package settle

import (
	"bytes"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
)

// Result is what reading an object back after a write whose request the
// client library sent more than once proves (Judge).
type Result int

const (
	// Unknown: the read-back proves nothing; the outcome stays
	// unknown.
	Unknown Result = iota
	// Ours: the object holds exactly the write's bytes and was
	// not last modified before the first attempt: an attempt landed (or
	// an identical body was written meanwhile), and its version is the
	// write's.
	Ours
	// NotApplied: the object was last modified before the write's
	// first attempt was sent, by the service's own clock, whatever bytes
	// it holds: no attempt landed, since one that had would be newer.
	NotApplied
)

// ReadBack is an object as a driver read it back to settle a write: its
// bytes (Data, at most the write's length + 1), version, last
// modification and the service's clock at the read (the response's Date
// header), both as the service gives them, to the second. Exists is false
// when the key does not exist.
type ReadBack struct {
	Exists   bool
	Data     []byte
	Version  driver.Version
	Modified time.Time
	Now      time.Time
}

// Judge judges what a read-back proves of a write of data
// whose first attempt was sent at sent (this machine's clock, read with
// its monotonic reading) and that the client library sent more than once:
// NotApplied if the service last modified the object before the
// write's first attempt, whatever bytes it holds; otherwise Ours if
// it holds data (an identical body that another writer stored during the
// write is taken for this one: bytes cannot tell them apart). The age is
// judged on the service's clock alone, so that the two machines' clocks
// may differ: the service's time at the first attempt
// is at least rb.Now minus the time elapsed here since sent (read
// monotonically, when the read-back's answer had come), and the second
// granularity of Date and Last-Modified is allowed for. Anything else
// (the key missing, other bytes newer than that) proves nothing.
func Judge(data []byte, sent time.Time, rb ReadBack) Result {
	if !rb.Exists || rb.Version == "" {
		return Unknown
	}
	// Age first: an object last written before the first attempt is not
	// this write's, even with the same bytes (an identical body stored
	// earlier, which IfAbsent or a stale IfMatch must still refuse).
	if !rb.Now.IsZero() && !rb.Modified.IsZero() {
		elapsed := time.Since(sent)
		// The modification happened before Modified+1s; the first attempt
		// at or after rb.Now-elapsed on the service's clock.
		if !rb.Modified.Add(time.Second).After(rb.Now.Add(-elapsed)) {
			return NotApplied
		}
	}
	if bytes.Equal(rb.Data, data) {
		return Ours
	}
	return Unknown
}
