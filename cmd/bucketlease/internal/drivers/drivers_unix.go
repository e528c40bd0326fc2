//go:build unix

package drivers

import _ "github.com/mushroomdb/bucketlease/driver/file"
