package lease

import (
	"maps"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// stamped returns the stamp Bucket writes on every object, and whether it
// writes one: false where the lease's driver keeps no metadata, whose
// objects a reader cannot tell late from in time.
func (l *Lease) stamped() (admin.Stamp, bool) { return l.stamp, l.caps.Metadata }

// withStamp returns md (a caller's own metadata, nil for none) with the
// lease's stamp added, which replaces any caller keys of the same names.
func (l *Lease) withStamp(md driver.Metadata) driver.Metadata {
	out := maps.Clone(md)
	if out == nil {
		out = driver.Metadata{}
	}
	maps.Copy(out, l.stamp.Metadata())
	return out
}
