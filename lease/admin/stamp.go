package admin

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"strconv"

	"github.com/mushroomdb/bucketlease/driver"
)

// The metadata keys of a Stamp: lowercase letters only, which every
// service keeps as given (see driver.Metadata).
const (
	metaEpoch    = "bucketleaseepoch"
	metaInstance = "bucketleaseinstance"
)

// Stamp is what Lease.Bucket writes on every object, as its metadata, in
// the request that makes the object visible: the epoch and the instance of
// the lease it was written under. A reader that finds an object stamped
// with an epoch older than that of a lease which had already begun when
// the object was written knows it for a late write (see the package
// lease package's documentation, "Epochs"). Only drivers that keep metadata
// (driver.Capabilities.Metadata) carry it. A lease's stamp is its Epoch
// and StampedInstance(InstanceID).
type Stamp struct {
	Epoch uint64
	// Instance is the instance id as metadata carries it: unchanged when
	// it is printable ASCII of at most 256 bytes without a space at
	// either end, percent-escaped when that fits, and otherwise
	// "sha256:" and the first 32 hex digits of its SHA-256
	// (StampedInstance).
	Instance string
}

// Metadata returns the stamp as object metadata.
func (s Stamp) Metadata() driver.Metadata {
	return driver.Metadata{metaEpoch: strconv.FormatUint(s.Epoch, 10), metaInstance: s.Instance}
}

// StampOf reads a stamp from an object's metadata. ok is false for an
// object that carries none (not written through Lease.Bucket, or on a
// driver that keeps no metadata) or whose epoch is not a number greater
// than zero: such an object's age is unknown, neither late nor in time.
func StampOf(md driver.Metadata) (s Stamp, ok bool) {
	e, err := strconv.ParseUint(md[metaEpoch], 10, 64)
	if err != nil || e == 0 || e > MaxEpoch {
		return Stamp{}, false
	}
	return Stamp{Epoch: e, Instance: md[metaInstance]}, true
}

// StampedInstance returns the instance id id as a Stamp carries it.
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
