package lease_test

import (
	"context"
	"slices"
	"testing"

	"github.com/mushroomdb/bucketlease/clock"
	"github.com/mushroomdb/bucketlease/driver"

	"github.com/mushroomdb/bucketlease/lease/admin"
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
		if got := admin.IsScratchKey(key); got != want {
			t.Errorf("IsScratchKey(%q) = %v, want %v", key, got, want)
		}
	}
}

// Lease.Bucket's List leaves out the lease's own scratch keys, those
// beside its LEASE, and lists a caller's key deeper down that is merely
// named like one.
func TestListHidesOnlyTheLeasesOwnScratchKeys(t *testing.T) {
	ctx := context.Background()
	b := machineClocksOnly()
	l := acquire(t, b, "A", clock.NewFake(t0))
	defer l.Release(ctx)
	mine := []string{"sub/LEASE.acquire-probe-0123456789abcdef", "a/b/LEASE.stream-probe-fedcba9876543210"}
	for _, k := range mine {
		if _, err := l.Bucket().Driver().Put(ctx, k, []byte("mine"), driver.PutOptions{If: driver.IfAbsent()}); err != nil {
			t.Fatalf("put %s: %v", k, err)
		}
	}
	// A leftover of the lease's own probe, beside its LEASE.
	if _, err := b.Put(ctx, "db1/LEASE.acquire-probe-0123456789abcdef", []byte("probe"), driver.PutOptions{If: driver.IfAbsent()}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for o, err := range l.Bucket().Driver().List(ctx, "") {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, o.Key)
	}
	slices.Sort(mine)
	if !slices.Equal(got, mine) {
		t.Fatalf("Lease.Bucket lists %q, want %q (the caller's keys, not the lease's own probe key)", got, mine)
	}
}
