//go:build !bucketlease_oldlease

package main

// buildTags are the tags the end-to-end tests build the binary with.
const buildTags = ""
