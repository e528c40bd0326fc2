// Package metadata turns the user metadata an SDK returns into what a
// driver reports.
package metadata

import (
	"strings"

	"github.com/mushroomdb/bucketlease/driver"
)

// Lower returns the user metadata of a service's response (an SDK's
// map, whose keys may come back in the case the service chose, canonical
// HTTP case on MinIO, as set on Azure) with lowercase keys, and an empty,
// non-nil driver.Metadata for none. Drivers pass what they report through it.
func Lower(m map[string]string) driver.Metadata {
	out := make(driver.Metadata, len(m))
	for k, v := range m {
		out[strings.ToLower(k)] = v
	}
	return out
}
