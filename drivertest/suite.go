package drivertest

import (
	"fmt"
	"slices"
)

// order is the suite: every check by name, in the order it runs and Names
// reports it (not file order). suite panics unless each name is defined
// exactly once. New checks go last, so lab/compat's table keeps its columns.
var order = []string{
	// The declaration, and Get (obligations 1, 2).
	"capabilities-declared",
	"get-missing",
	// Put and its conditions (obligation 3), versions (5).
	"put-if-absent-new",
	"put-if-absent-existing",
	"put-if-match-current",
	"version-unguessable",
	"put-if-match-stale",
	"put-if-match-made-up",
	"put-if-match-missing",
	"put-large-refused",
	// Delete (obligation 7).
	"delete-missing",
	"delete-unconditional",
	"delete-if-match-wrong",
	"delete-if-match-missing",
	"delete-if-match-current",
	"delete-condition-refused",
	// Exclusion under concurrency (obligation 3).
	"race-if-absent",
	"cas-counter",
	// Failures: cancellation, versions, wildcards, missing buckets,
	// credentials, keys, retries (obligations 2, 4, 6, 8, 9, 10, 11).
	"context-canceled",
	"get-version",
	"put-if-match-wildcard",
	"missing-bucket",
	"wrong-credentials",
	"key-prefix-of-key",
	"put-canceled-mid-body",
	"put-retry-after-landed",
	// The lease on the driver (obligation 12).
	"lease-acquire",
	"lease-second-refused",
	"lease-renew",
	"lease-takeover",
	"lease-fenced-release",
	"lease-lost-reply",
	"lease-release",
	"lease-clock-wrong-contender",
	"lease-clock-holder-fenced",
	"lease-clock-takeover-in-time",
	// A write cancelled at each of its steps (obligation 6).
	"put-canceled-settles",
	// Streamed writes (obligation 13).
	"stream-if-absent-existing",
	"stream-if-match-stale",
	"stream-race-if-absent",
	"stream-canceled-mid-body",
	"stream-round-trip",
	"stream-may-start-refused",
	// Listing (obligation 14).
	"list-paged",
	"list-prefix-of-key",
	"list-odd-keys",
	"list-read-your-write",
	// The wire, through Options.Transport (obligations 2, 4, 5, 11).
	"version-header-missing",
	"wildcard-never-sent",
	"lease-lost-reply-wire",
	// A body whose reader fails is never committed.
	"stream-reader-fails",
	// Keys that XML 1.0 cannot carry list back exactly.
	"list-nonchar-keys",
	// The service's time, where the driver reports it (obligation 15).
	"service-time",
	"service-time-refused",
	// User metadata, where the driver declares it (obligation 16).
	"metadata-roundtrip",
	"metadata-streamed",
	"metadata-refused-write",
	"metadata-listed",
	"metadata-invalid",
	"lease-stamps",
	"lease-epoch",
	// A listing of a prefix no key can start with is refused (obligation 14).
	"list-invalid-prefix",
	// A streamed write whose commit is held past another holder's write
	// is dated no earlier than its commit (obligation 15).
	"stream-dated-at-commit",
	// Conditional writes raced between operating-system processes, each
	// with a bucket of its own from Options.URL (obligation 3).
	"exclusion-across-processes",
	// A failed streamed write leaves nothing (13); versions (5).
	"stream-failed-leaves-nothing",
	"version-a-b-a",
	// A streamed write holds part size × concurrency bytes of its body,
	// never the whole (obligation 13).
	"stream-memory-bounded",
}

// checks is the suite in order.
var checks = suite(order, getChecks, putChecks, versionChecks, deleteChecks, failureChecks, keyChecks, leaseChecks, leaseClockChecks, cancelChecks, streamChecks, listChecks, wireChecks, serviceTimeChecks, metadataChecks, visibleChecks, processChecks, memChecks)

// suite returns defs in the order of names, and panics unless each name is
// defined exactly once and each check listed.
func suite(names []string, defs ...[]check) []check {
	byName := map[string]check{}
	for _, c := range slices.Concat(defs...) {
		if _, dup := byName[c.name]; dup {
			panic(fmt.Sprintf("drivertest: check %q is defined twice", c.name))
		}
		byName[c.name] = c
	}
	out := make([]check, 0, len(names))
	for _, n := range names {
		c, ok := byName[n]
		if !ok {
			panic(fmt.Sprintf("drivertest: check %q is listed in the suite's order but not defined", n))
		}
		delete(byName, n)
		out = append(out, c)
	}
	for n := range byName {
		panic(fmt.Sprintf("drivertest: check %q is defined but not listed in the suite's order (suite.go)", n))
	}
	return out
}
