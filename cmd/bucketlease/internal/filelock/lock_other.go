//go:build !unix

package filelock

import "github.com/mushroomdb/bucketlease/driver"

// Holders returns nil: the file driver, whose lock it names, is built
// for unix systems only.
func Holders(driver.Bucket, string) []Holder { return nil }
