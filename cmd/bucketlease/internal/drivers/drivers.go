package cli

// Every driver of this module is linked in, so that every scheme works in
// the installed binary. The file driver is Unix-only (drivers_unix.go).
import (
	_ "github.com/mushroomdb/bucketlease/driver/azure"
	_ "github.com/mushroomdb/bucketlease/driver/gcs"
	_ "github.com/mushroomdb/bucketlease/driver/mem"
	_ "github.com/mushroomdb/bucketlease/driver/minio"
	_ "github.com/mushroomdb/bucketlease/driver/r2"
	_ "github.com/mushroomdb/bucketlease/driver/s3"
)
