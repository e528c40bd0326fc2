package drivers

import (
	_ "github.com/mushroomdb/bucketlease/driver/azure"
	_ "github.com/mushroomdb/bucketlease/driver/gcs"
	_ "github.com/mushroomdb/bucketlease/driver/mem"
	_ "github.com/mushroomdb/bucketlease/driver/minio"
	_ "github.com/mushroomdb/bucketlease/driver/r2"
	_ "github.com/mushroomdb/bucketlease/driver/s3"
)
