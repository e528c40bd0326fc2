//go:build bucketlease_oldlease

package main

// buildTags are the tags the end-to-end tests build the binary with: the
// negative controls need the old behaviours (oldcli_on.go).
const buildTags = "bucketlease_oldlease"
