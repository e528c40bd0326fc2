//go:build unix && !linux

package file

import (
	"errors"
	"os"

	"github.com/mushroomdb/bucketlease/driver"
)

// probeMetadata reports that object metadata is kept on Linux only: the
// driver keeps it in user extended attributes, whose system calls differ
// on other systems.
func probeMetadata(string) error {
	return errors.New("the file driver keeps object metadata in extended attributes on Linux only")
}

// setMetadata is never called: the bucket does not declare metadata.
func setMetadata(*os.File, driver.Metadata) error {
	return errors.New("object metadata is not supported on this system")
}

// readMetadata is never called: the bucket does not declare metadata.
func readMetadata(*os.File) (driver.Metadata, error) { return driver.Metadata{}, nil }
