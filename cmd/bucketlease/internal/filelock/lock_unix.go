//go:build unix

package filelock

import (
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/file"
)

// Holders names the processes holding the file driver's lock on the
// lease object key (file.Bucket.LockHolders), or nil for another driver,
// a bucket show did not open (a directory without LEASE), or holders it
// cannot read: the lease is what show is for.
func Holders(b driver.Bucket, key string) []Holder {
	fb, ok := b.(*file.Bucket)
	if !ok {
		return nil
	}
	hs, err := fb.LockHolders(key)
	if err != nil {
		return nil
	}
	out := make([]Holder, 0, len(hs))
	for _, h := range hs {
		out = append(out, Holder{Pid: h.Pid, Stopped: h.Stopped})
	}
	return out
}
