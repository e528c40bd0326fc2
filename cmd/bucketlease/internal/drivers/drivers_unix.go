//go:build unix

package cli

import _ "github.com/mushroomdb/bucketlease/driver/file"
