package admin

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"strconv"

	"github.com/mushroomdb/bucketlease/driver"
)

// Stamp metadata keys: lowercase letters, which every service keeps.
const (
	metaEpoch    = "bucketleaseepoch"
	metaInstance = "bucketleaseinstance"
)

// Stamp is the metadata Lease.Bucket writes on every object, in the request
// that makes it visible: the epoch and instance of its lease. An object
// stamped with an epoch older than a lease that had begun before it was
// written is a late write. Only drivers that keep metadata carry it.
type Stamp struct {
	Epoch uint64
	// Instance is the instance id as metadata carries it (StampedInstance).
	Instance string
}

// Metadata returns the stamp as object metadata.
func (s Stamp) Metadata() driver.Metadata {
	return driver.Metadata{metaEpoch: strconv.FormatUint(s.Epoch, 10), metaInstance: s.Instance}
}

// StampOf reads a stamp from metadata; ok is false without one (or without
// an epoch in range): such an object is neither late nor in time.
func StampOf(md driver.Metadata) (s Stamp, ok bool) {
	e, err := strconv.ParseUint(md[metaEpoch], 10, 64)
	if err != nil || e == 0 || e > MaxEpoch {
		return Stamp{}, false
	}
	return Stamp{Epoch: e, Instance: md[metaInstance]}, true
}

// StampedInstance returns id as a Stamp carries it: unchanged if valid
// metadata, percent-escaped if that fits, else "sha256:" and 32 hex digits.
func StampedInstance(id string) string {
	if (driver.Metadata{metaInstance: id}).Validate() == nil {
		return id
	}
	if esc := url.PathEscape(id); (driver.Metadata{metaInstance: esc}).Validate() == nil {
		return esc
	}
	sum := sha256.Sum256([]byte(id))
	return "sha256:" + hex.EncodeToString(sum[:16])
}
