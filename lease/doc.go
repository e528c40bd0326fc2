// Package lease is an advisory single-writer lease on an object-store
// prefix: one object, {prefix}/LEASE, names the instance that uploads to
// the prefix.
//
//	{"instance_id":"…","acquired_at":"…","renewed_at":"…","ttl_s":30}
//
// The holder renews it every TTL/3 and releases it on shutdown. Another
// instance that finds a lease renewed less than its TTL ago uploads
// nothing; a lease older than that (its holder died or lost the network)
// may be taken over.
//
// It catches the common operator error, two machines configured with one
// backup bucket; it does not make two writers safe. On a service that
// enforces conditional writes, taking and renewing the lease are
// compare-and-swap writes (If-None-Match: *, If-Match), so two instances
// that start together get exactly one lease, and a holder that was taken
// over learns so at its next renewal ([ErrLost]). A holder fences itself:
// it starts no write later than two thirds of a TTL after its last
// successful renewal was sent ([Lease.MayWrite]), a third of a TTL before
// anyone may take the lease over. Every acquire proves that the service
// refuses stale conditional writes, and fails closed with
// [ErrPreconditionsIgnored] where it does not; a machine whose clock is
// more than a third of a TTL off the service's is refused with [ErrClock].
//
// # Using it
//
// [Acquire] takes the lease on the prefix of a [bucket.Bucket], with
// [Options] naming the instance; [ErrHeld] says another instance holds it,
// and Options.Wait waits for it instead. [Lease.Keep] renews until the
// lease ends, [Lease.Fence] returns a context cancelled the moment the
// holder must stop, and [Lease.Bucket] is the bucket to write through: it
// refuses writes once fenced, cancels those in flight, and stamps every
// object with the lease's epoch. [Lease.Release] frees the lease, never
// overwriting a record it did not write. To retry by hand, use one
// [Contender]: a write whose answer was lost is recognised as its own.
//
// Every lease has an epoch ([Lease.Epoch]) greater than every earlier
// holder's, a fencing token for systems outside the bucket. Package
// lease/admin is the operator's and the reader's side: the lease object's
// record and state (admin.Inspect), and the objects a holder wrote after
// its lease had passed on (admin.LateWrites, admin.Status.LateRead).
// [Break] ends a stuck lease.
//
// # What no lease can stop
//
// A stale holder's request that the service has already received
// completes, and a process paused between its fence check and its request
// sends it when it wakes. So write immutable objects with If-None-Match: *
// and manifests with If-Match against the version you last wrote or read.
//
// docs/promises.md lists each guarantee with the tests that prove it, how
// the lease keeps it (ownership by content, the service's clock, the
// probes, release, epochs, rate limits), and what it assumes.
package lease
