// Package lease is an advisory single-writer lease on an object-store
// prefix: one object, {prefix}/LEASE, names the instance that uploads to
// the prefix.
//
//	{"instance_id":"…","acquired_at":"…","renewed_at":"…","ttl_s":30}
//
// The holder renews it every TTL/3 and releases it on shutdown; a lease not
// renewed for a TTL may be taken over. It catches the common operator
// error, two machines configured with one backup bucket; it does not make
// two writers safe. Taking and renewing are compare-and-swap writes
// (If-None-Match: *, If-Match), so two instances starting together get one
// lease, and a holder taken over learns so at its next renewal ([ErrLost]).
// A holder starts no write later than two thirds of a TTL after its last
// successful renewal was sent ([Lease.MayWrite]), a third of a TTL before
// anyone may take over. Every acquire proves that the service refuses stale
// conditional writes ([ErrPreconditionsIgnored]), and a clock more than a
// third of a TTL off the service's is refused ([ErrClock]).
//
// # Using it
//
// [Acquire] takes the lease on a [bucket.Bucket]'s prefix ([ErrHeld] if
// another instance holds it; Options.Wait waits instead). [Lease.Keep]
// renews until the lease ends, [Lease.Fence] returns a context cancelled
// the moment the holder must stop, and [Lease.Bucket] is the bucket to
// write through: fenced, and stamping every object with the lease's epoch.
// [Lease.Release] frees the lease, never overwriting a record it did not
// write. To retry by hand, use one [Contender]. [Lease.Epoch] is a fencing
// token for systems outside the bucket. Package lease/admin is the
// operator's and reader's side (the record, its state, late writes);
// [Break] ends a stuck lease.
//
// # What no lease can stop
//
// A stale holder's request already received by the service completes, and
// a process paused between its fence check and its request sends it when it
// wakes. So write immutable objects with If-None-Match: * and manifests with
// If-Match on the version last written or read. docs/promises.md lists each
// guarantee, how it is kept, its tests and its assumptions.
package lease
