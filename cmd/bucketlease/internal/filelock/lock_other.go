//go:build !unix

package cli

import "github.com/mushroomdb/bucketlease/driver"

// lockHolders returns nil: the file driver, whose lock it names, is built
// for unix systems only.
func lockHolders(driver.Bucket, string) []lockHolder { return nil }
