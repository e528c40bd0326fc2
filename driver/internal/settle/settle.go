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
	// Ours: the object holds the write's bytes and is not older than
	// the first attempt: an attempt landed.
	Ours
	// NotApplied: the object is older than the first attempt, by the
	// service's clock: no attempt landed.
	NotApplied
)

// ReadBack is an object as a driver read it back to settle a write: its
// bytes (at most the write's length + 1), version, Last-Modified and the
// response's Date.
type ReadBack struct {
	Exists   bool
	Data     []byte
	Version  driver.Version
	Modified time.Time
	Now      time.Time
}

// Judge judges what a read-back proves of a write of data whose first
// attempt was sent at sent (monotonic) and that was sent more than once.
// The age is judged on the service's clock alone: its time at the first
// attempt is at least rb.Now minus the time elapsed here since sent, less
// a second of HTTP-date granularity. An identical body another writer
// stored meanwhile is taken for this write's: bytes cannot tell them apart.
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
