// Package drivers links every driver of this module into the command, so
// that every scheme works in the installed binary; the file driver is
// Unix-only (drivers_unix.go). Importing it registers them.
package drivers

import (
	_ "github.com/mushroomdb/bucketlease/driver/azure"
	_ "github.com/mushroomdb/bucketlease/driver/gcs"
	_ "github.com/mushroomdb/bucketlease/driver/mem"
	_ "github.com/mushroomdb/bucketlease/driver/minio"
	_ "github.com/mushroomdb/bucketlease/driver/r2"
	_ "github.com/mushroomdb/bucketlease/driver/s3"
)
