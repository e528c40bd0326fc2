package lease

import (
	"errors"
	"fmt"
	"time"

	"github.com/mushroomdb/bucketlease/lease/admin"
)

// EnvConditional is the switch that runs the lease best-effort on a service
// without working conditional writes: MUSHROOMDB_BACKUP_LEASE_CONDITIONAL=off.
// Unset, empty or "on" means conditional; any other value is an error.
const EnvConditional = "MUSHROOMDB_BACKUP_LEASE_CONDITIONAL"

var (
	// ErrHeld: another instance holds the lease. The error is a *HeldError
	// naming the holder and when the lease could be taken over.
	ErrHeld = errors.New("lease held by another instance")

	// ErrLost: the lease object was taken over, removed, broken or marked
	// released by someone else, or holds a record this lease did not write.
	// The holder must stop writing; it learns this at its next renewal.
	ErrLost = errors.New("lease lost to another instance")

	// ErrFenced: no renewal succeeded for two thirds of a TTL, so the holder
	// stopped itself from writing before anyone could take the lease over.
	// The lease object may still hold our record; acquiring again with the
	// same Contender recognises it and takes it back at once. Releasing the
	// old, fenced *Lease afterwards is safe: it leaves the new lease alone.
	ErrFenced = errors.New("lease fenced: not renewed in time")

	// ErrReleased: the lease was released; nothing more may be written
	// under it.
	ErrReleased = errors.New("lease released")

	// ErrInstanceInUse: another live process holds the lease under this
	// instance id. Two processes configured with one id (two containers
	// with one hostname, a cloned machine with its id file) are the
	// operator error the lease exists to catch: the second is refused with
	// this error, or, if it took the lease while the first was stalled, the
	// first loses it (ErrLost). Retrying does not help; give each process
	// its own id.
	ErrInstanceInUse = errors.New("another live process uses this instance id")

	// ErrPreconditionsIgnored: the service does not apply write
	// preconditions as the lease needs: it accepted a write whose
	// precondition did not hold (so it cannot give exclusion), or refused
	// one whose precondition held (so no renewal could succeed), or its
	// driver declares no exclusion. Acquire fails closed with it rather than
	// weaken exclusion silently or hold a lease it could not keep.
	ErrPreconditionsIgnored = errors.New("the service ignores write preconditions")

	// ErrWritesInFlight: Release cancelled writes through Lease.Bucket that
	// had not returned when its context ended, so it did not mark the lease
	// released (a successor could otherwise start while a cancelled write
	// still lands). The record stays until it goes stale; call Release
	// again, with a context that leaves the writes time to return, to
	// release it sooner.
	ErrWritesInFlight = errors.New("writes under the lease still in flight")

	// ErrClock: this process's wall clock was stepped back (or stood
	// still) by more than a third of a TTL, measured against the latest
	// record it stamped and against its monotonic clock since it last read
	// both, so the records it would stamp would make the lease look older
	// than it is. A holder fences itself (ErrFenced, saying so), and a
	// Contender, even one that has stamped nothing yet, does not acquire
	// until the clock reads within a third of a TTL of where it should
	// (caught up, or stepped forward again). A clock already wrong when
	// the process started cannot be seen this way; it is seen by comparing
	// the clock with the service's, where the driver reports the
	// service's time: an offset provably beyond a third of a TTL makes
	// Acquire fail with ErrClock, naming both times, and fences a holder
	// at its next renewal with an error wrapping ErrFenced and ErrClock.
	ErrClock = errors.New("the wall clock is not to be trusted")
)

// HeldError is the error Acquire returns when another instance holds the
// lease: what the contender saw (its Status: Key, Version, Record, State,
// Reason, Now, TakeoverAt and Holder), and whether the record names this
// instance's own id. errors.Is(err, ErrHeld) matches it.
type HeldError struct {
	// Status is the lease as the contender found it; State is Fresh or
	// Suspect, and TakeoverAt is the earliest time, by this instance's
	// wall clock, at which it could be taken over if it stays as it is.
	admin.Status
	// SameID reports a fresh record that names this instance's own id but
	// that this process did not write: a restart of this instance, whose
	// previous process left it, or another live process configured with
	// the same id. It is taken over like any record once it is stale, at
	// TakeoverAt; if it changes meanwhile, Acquire returns
	// ErrInstanceInUse. (A state directory, Options.StateDir, lets a
	// restart adopt it at once.)
	SameID bool
}

// Error names the holder, the lease's age and when it could be taken over.
func (e *HeldError) Error() string {
	wait := e.TakeoverAt.Sub(e.Now).Round(time.Second)
	if e.State == admin.Suspect {
		who := "an unreadable record"
		if e.Record != nil {
			who = "instance " + e.Record.InstanceID
		}
		return fmt.Sprintf("lease %s is held by %s and is suspect (%s); it can be taken over in %v if it stays unchanged",
			e.Key, who, e.Reason, wait)
	}
	r := e.Record
	if e.SameID {
		return fmt.Sprintf("lease %s names this instance id (%s) but this process did not write it: a restart of this instance, or another live process with the same id (%s, ttl %ds); it can be taken over in %v if it stays unchanged",
			e.Key, r.InstanceID, renewedText(e.Now, r.RenewedAt), r.TTLSeconds, wait)
	}
	return fmt.Sprintf("lease %s is held by instance %s (%s, ttl %ds); it can be taken over in %v if its holder stops renewing",
		e.Key, r.InstanceID, renewedText(e.Now, r.RenewedAt), r.TTLSeconds, wait)
}

// renewedText says when a record was renewed, seen at now: "renewed 5s
// ago", or for a record stamped ahead of now (a writer whose clock is
// ahead) "stamped 5s in the future".
func renewedText(now, renewed time.Time) string {
	age := now.Sub(renewed).Round(time.Second)
	if age < 0 {
		return fmt.Sprintf("stamped %v in the future", -age)
	}
	return fmt.Sprintf("renewed %v ago", age)
}

// Is makes errors.Is(err, ErrHeld) true.
func (e *HeldError) Is(target error) bool { return target == ErrHeld }

// ignoredError is the error for a probe write the service accepted.
func ignoredError(key, which string) error {
	return fmt.Errorf("acquire %s: %w: the service accepted a write with %s that it should have refused, so it cannot keep a second writer out; "+
		"backups do not run without exclusion. Use a service that honours conditional writes, or set %s=off to run best-effort (read then write; two writers starting together may both proceed)",
		key, ErrPreconditionsIgnored, which, EnvConditional)
}
