package lease_test

import (
	"testing"

	"github.com/mushroomdb/bucketlease/lease"
)

func TestIsScratchKey(t *testing.T) {
	for key, want := range map[string]bool{
		"db1/LEASE.acquire-probe-0123456789abcdef": true,
		"LEASE.break-probe-0123456789abcdef":       true,
		"a/b/LEASE.stream-probe-fedcba9876543210":  true,
		"db1/LEASE":                                  false,
		"db1/LEASE.acquire-probe-0123":               false, // too short
		"db1/LEASE.acquire-probe-0123456789abcdeg":   false, // not hex
		"db1/LEASE.-probe-0123456789abcdef":          false, // no kind
		"db1/XLEASE.acquire-probe-0123456789abcdef":  false,
		"db1/chunks/LEASE.x":                         false,
		"db1/LEASE.acquire-probe-0123456789abcdef/x": false,
	} {
		if got := lease.IsScratchKey(key); got != want {
			t.Errorf("IsScratchKey(%q) = %v, want %v", key, got, want)
		}
	}
}
