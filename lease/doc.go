// Package lease is an advisory single-writer lease on an object-store
// prefix: one object, {prefix}/LEASE, names the instance that uploads to
// the prefix.
//
//	{"instance_id":"…","acquired_at":"…","renewed_at":"…","ttl_s":30}
//
// The holder renews it every TTL/3 and releases it on shutdown. Another
// instance that finds a lease renewed less than its TTL ago, by the
// reader's own clock, uploads nothing; a lease older than that (its holder
// died or lost the network) may be taken over.
//
// # What it promises
//
// It catches the common operator error: two machines configured with one
// backup bucket. It does not make two writers safe. On a service that
// enforces conditional writes (AWS S3, Cloudflare R2, MinIO, Google Cloud
// Storage, Azure Blob):
//
//   - Taking the lease is one conditional write: If-None-Match: * on an
//     empty key, If-Match over a stale lease. So is every renewal. Two
//     instances that start together get exactly one lease between them, and
//     a holder whose lease was taken over learns so at its next renewal
//     (ErrLost). Acquire reads the lease object before it writes anything,
//     so a contender that finds the lease held writes nothing over it, even
//     on a path (a proxy, a gateway, an old client) that drops the
//     precondition.
//   - A request whose answer was lost is not a lost lease. An instance keeps
//     one id across attempts (Options.InstanceID, a Contender); a write that
//     timed out on the client but landed on the service leaves a record
//     that this Contender (or this Lease) sent, and the next attempt adopts
//     it at once. Across a restart, a state directory (Options.StateDir)
//     carries that proof: the new process adopts what its dead predecessor
//     left at once, and never what a stopped predecessor or a twin elsewhere
//     holds (see state.go).
//   - Ownership is proven by content, never by the instance id alone. Every
//     record a Contender writes is unique (renewed_at increases strictly
//     across its writes; acquired_at carries a random fraction of a second
//     naming the lease incarnation), and a record read back is ours only if
//     it is exactly one we sent. A fresh record that names our id but that
//     we did not write (a restart of this instance, or a second live process
//     configured with the same id) is treated like anyone else's: taken over
//     once stale, a TTL after its last renewal. If it changes while a
//     contender watches it, a live process is renewing it, and Acquire
//     returns ErrInstanceInUse; a holder whose record is replaced by such a
//     process gets ErrLost wrapping ErrInstanceInUse. Two live processes
//     with one id never both have MayWrite true.
//   - A holder fences itself: it may start a write only until two thirds of
//     a TTL after its last successful renewal was sent (MayWrite), measured
//     on the monotonic and the wall clock; Fence and Bucket cancel work
//     still in flight at that moment. Nobody else may take the lease before
//     a full TTL, so a holder that cannot renew stops a third of a TTL
//     before its lease can be taken. A holder whose wall clock fell more
//     than a third of a TTL behind its monotonic clock (stepped back, stuck)
//     fences itself at its next renewal rather than stamp a record that
//     makes the lease look older than it is, and a contender whose clocks
//     drifted apart that way since it last read them (a process started
//     beside a holder, on a machine whose clock then stepped back) refuses
//     to acquire with ErrClock.
//   - A clock that is already wrong when the process starts is found by
//     comparing it with the service's, where the driver reports the
//     service's time (every driver in this module does: the Date of each
//     answer and the object's modification time, which come with the
//     answers the lease gets anyway, so the request budget is unchanged).
//     Each acquire and each renewal measures this machine's offset from
//     the service from when its request was sent and its answer came; an
//     offset provably beyond a third of a TTL makes Acquire fail with
//     ErrClock (naming both times) before it writes anything, and fences a
//     holder at that renewal (ErrFenced and ErrClock).
//   - A record is stale only when it is stale on both clocks: renewed_at
//     plus the TTL has passed on the reader's clock, and, on the service's
//     clock, the answer that read it came at least a TTL (plus the dates'
//     resolution, a second on HTTP services) after the write that made it
//     (Date − Modified). So a contender whose clock is wrong cannot find a
//     live lease stale, and a dead holder's lease is still taken over about
//     a TTL after its last renewal (within 1.5 TTL), with no wait from when
//     the contender first saw it. A record whose stamp is more than a third
//     of a TTL ahead of its modification time was stamped by a wrong clock:
//     it is judged on the service's clock alone, never by its stamp. Where
//     the driver reports no service time, records are judged on the
//     reader's clock alone and the machines' clocks are assumed
//     synchronised (Lease.ServiceClock and Status.Service are then empty,
//     and the bucketlease command says "clocks: assumed synchronised").
//   - Clock skew up to that third of a TTL (10 s at the default 30 s) is
//     absorbed. A record stamped in the future counts as fresh; one stamped
//     more than its own TTL ahead (on a service without its time), or with
//     a TTL over MaxSaneTTL, or that is not a record at all, is suspect and
//     is taken over once a contender has seen it unchanged for one of its
//     own TTLs (Watch).
//   - Every acquire probes the service: the lease is written once more with
//     If-None-Match: * and once with If-Match on a made-up version, and both
//     must be refused. If either is accepted, Acquire fails closed with
//     ErrPreconditionsIgnored. Its own first write may then have gone over a
//     holder that had just acquired, so it leaves no lease anyone could take
//     at once: it re-stamps its record to block the prefix for a full TTL,
//     until such a holder has fenced, and its error says what it may have
//     overwritten and until when the prefix is blocked. Exclusion is never
//     weakened silently: MUSHROOMDB_BACKUP_LEASE_CONDITIONAL=off (EnvConditional)
//     is the only way to run best-effort, and it is logged at WARN and
//     reported by Lease.Exclusion.
//   - Release never removes or overwrites a record it did not write, on any
//     service, whatever its driver declares. It first stops all writing
//     under the lease (MayWrite false, Bucket refusing, Fence contexts
//     cancelled), waits for every write through Bucket that it cancelled to
//     return (a write already on the wire still lands; a successor must not
//     start before it has), then overwrites our record with If-Match by a
//     released record (ttl_s 0, stale to every reader at once). If-Match on
//     PUT is the one condition the acquire probe of this very lease proved;
//     Release never deletes, because many services that serve the S3 API
//     ignore the condition on DELETE. Break, for operators, reads first and
//     proves If-Match on a scratch key before it writes, so it never
//     overwrites a version newer than the one the operator looked at; over
//     a fresh record it writes one that stays fresh until the broken record
//     would have gone stale, so nobody takes over before the broken
//     holder's fence has passed (BreakAllowingOverlap frees it at once, for
//     a holder known to be dead).
//   - Writes under the lease go through Bucket: Put, Delete, and streamed
//     uploads of any size (driver.PutStream on Bucket) whose every part and
//     whose commit start only while MayWrite holds, and which are aborted if
//     the lease ends while they are in flight. List passes through, with
//     keys relative to the prefix.
//
// # What it proves at run time, and what it assumes
//
// Proven at every acquire, on the LEASE key: the service refuses
// If-None-Match: * on an existing object and If-Match on a version that is
// not current. Proven by every read-back: whether a write whose answer was
// lost landed (the stored record is exactly the one sent, at a new version).
//
// Proven at every acquire and renewal, where the driver reports the
// service's time: that this machine's wall clock is within a third of a
// TTL of the service's.
//
// Why judging by the service's clock keeps the fence's guarantee: a holder
// stops writing two thirds of a TTL after it sent its latest renewal, on
// its own monotonic clock; the service stamped that renewal's modification
// time no earlier than it received it, so after it was sent. A reader
// takes over only once the service's clock says more than a TTL has passed
// since that stamp, a third of a TTL after the holder stopped: that third
// absorbs a service clock that steps, two front ends of the service that
// differ, and a holder's monotonic clock that runs slow.
//
// Assumed, and not provable from one machine: that the service enforces
// preconditions on other keys as it does on LEASE; that the service's
// clock does not jump by more than a third of a TTL between two of its
// answers (where the driver reports it), or that wall clocks stay within a
// third of a TTL of each other (where it does not); that monotonic clocks
// run at about the same rate; that a driver's Get returns the body and
// version of one stored object, and the service's time of that answer; and,
// for the file driver, that the directory is on a local file system (flock
// excludes processes on one machine only).
//
// Limits of the fence. MayWrite and Bucket are exact on both clocks. Done
// and the Fence contexts are cancelled by a timer on the monotonic clock
// that also looks at the wall clock at least once a second, so after a
// suspension (monotonic clock frozen, wall clock past the deadline) they
// may be cancelled up to a second late; writes started through Bucket are
// refused at once all the same. A write through Bucket that the fence
// cancels in flight may still land: its error wraps
// driver.ErrOutcomeUnknown (and the fence's cause), never a bare
// context.Canceled; read the object back and judge it (Status.Late).
//
// Interrupted acquires. Before its first write of the lease object, an
// Acquire whose context ends returns at once. After it, the acquire runs
// on for up to ten seconds, to learn what it wrote, and then releases it:
// the error wraps the context's and says that the lease was taken and
// released, or that nothing of it is left. It never leaves a fresh record
// that nobody renews (unless the service stops answering, which the error
// then says).
//
// Rate limits. R2 and Cloud Storage allow about one write per second to
// one object name and answer a faster one with 429 (driver.ErrRateLimited),
// which the service refused before applying it. An acquire writes the
// lease object, and its scratch key, several times within a second: where
// the driver declares the limit (driver.Capabilities.KeyWriteInterval),
// these writes take turns, each starting the interval after the previous
// one's answer came, so an acquire there takes a few seconds more (the
// requests are the same), and a TTL too short for those turns to end
// before the fence (under nine intervals) is refused by NewContender,
// before anything is written. A write answered 429 anyway (on any driver) is
// sent again after the service's Retry-After (or the declared interval,
// or a second), within the call's context and, for an acquire's writes,
// before the lease it would make is fenced; a renewal, before the fence
// deadline. A 429 is never taken for a refusal: the probes' refusals are
// still proven by 412s, and a renewal or release answered 429 is not a
// lost lease.
//
// Limits of proving the path. Acquire reads first, and writes blind only
// to a key it has just read as free. Before its first write to the lease
// object it proves, on a scratch key beside it (IsScratchKey), that the
// path refuses a write with If-None-Match: * over an existing object and
// one with If-Match on a made-up version; after the write it probes the
// lease object itself. So a path that drops a header from every request,
// or from the first request of an acquire or a connection, is refused with
// nothing written to the lease object, and a path that treats the lease
// object unlike its neighbours is caught by the probes after the write:
// the failed acquire then blocks the prefix for a full TTL, so that
// nobody takes it before a holder it may have overwritten has fenced. What
// no client can see is a path that applies a header to every probe and
// drops it from the one write that matters. Run the lease only on paths
// that apply preconditions to every request.
//
// # Epochs
//
// Every lease has an epoch (Lease.Epoch), a number in its record that is
// greater than the epoch of every earlier holder of the prefix: a fencing
// token that whatever the holder writes to can check. An acquire that
// replaces a record with an epoch writes one more than it, or the service's
// clock in microseconds if that is more, under the same compare-and-swap
// that takes the lease, so two contenders cannot both follow one record.
// Renewals, the release and a break keep the epoch; a break is no holder.
//
// Where the chain is broken (the lease object was deleted by an operator
// or a sync tool, or holds a record without an epoch or no record at all)
// the epoch comes from the service's clock alone: the microseconds of its
// Date plus its resolution. Every epoch whose record landed before a given
// answer of the service was taken from that clock no later than the
// answer's Date plus a resolution, plus one per takeover in between; so
// the acquire waits until the service's clock reads one resolution past
// its latest answer (a second on services whose Date is in whole seconds,
// two on the file driver, whose mtimes may be that coarse), reading the
// key again, and takes its epoch from a Date after that. Over a record
// (one without an epoch, or not a record), If-Match keeps anything from
// landing between that read and the write, so the wait comes first. On a
// free key nothing does: another holder may come, go and be deleted while
// the create's write is on its way. So a create writes its record without
// an epoch, waits past that write's answer, and writes the record again,
// with its epoch, If-Match on the version it created (the write that
// shows the service accepts a current If-Match, which every create makes),
// before the lease is made. A service whose clock does not move on in that
// time is refused (ErrClock). On a service that creates an object on an
// If-Match over a missing key (a deviation some S3-compatible servers
// have, which drivertest's put-if-match-missing catches), a takeover whose
// record was deleted while its write was in flight lands with an epoch
// that follows a record that is gone, and may be under one that came and
// went since. This holds as long as the service's
// clock does not go back. If it goes back by d, an acquire after a delete
// may take an epoch up to d (in microseconds) smaller than an earlier one;
// epochs that follow a record are still greater, whatever the clock does.
// Where the driver reports no service time, the epoch after a break in
// the chain comes from this machine's clock, and orders holders across a
// delete only as far as the machines' clocks agree.
//
// Hand the epoch to whatever the holder writes to that can compare numbers
// (a database row updated only where its epoch is not greater; the
// bucketlease command passes it to its command as BUCKETLEASE_EPOCH).
// Within the bucket, Lease.Bucket stamps every object it writes, where
// the driver keeps metadata (driver.Capabilities.Metadata), with the
// lease's epoch and instance (Stamp), in the request that makes the
// object visible; StampOf reads it back from a Get's or a listing's
// metadata. Lease.Stamp says whether the lease's driver stamps at all.
//
// A late write is an object stamped with an epoch older than that of a
// holder who had already taken the prefix when the service stored it: a
// request its writer sent before a pause, which the service received
// after the next holder began. To tell one, the record says when its
// holder began on the service's clock (Began, an answer's Date after the
// write that took the prefix plus the resolution; written from the first
// renewal or the release on) and remembers the last MaxBefore holders
// (Before). Status.Eras lists them; LateBy judges an object by its stamp
// and its modification time; LateWrites lists the late objects under a
// prefix (the bucketlease command's list --late). Both times are the
// service's, so no machine's clock enters the judgement. An object the
// service stored at or after a later holder's Began was written late; one
// stored within the resolution of the service's clock after a takeover
// may be judged in time. Restore and retention code should restore
// nothing from a late object (see examples/backupworker).
//
// A record without an epoch (written by an older version, or by another
// implementation of the seed specification, whose four fields a record
// still carries unchanged) reads as epoch 0, which orders nothing. The
// largest epoch is 2⁵³, which JSON readers that parse numbers as doubles
// keep exactly; a record at it cannot be followed, and an acquire over it
// fails.
//
// # What no lease can stop
//
// A stale holder's request that the service has already received
// completes, and a process paused between its fence check and its request
// (a VM frozen mid-call) sends it when it wakes. So write immutable objects
// with If-None-Match: * and manifests with If-Match against the version you
// last wrote or read: then such a late write can only add an object no
// manifest names, or a manifest nothing points at. Without conditional
// writes, two overlapping writers can overwrite each other's objects.
package lease
