//go:build unix

package main

import _ "github.com/mushroomdb/bucketlease/driver/file"
