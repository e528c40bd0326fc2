package lease

import (
	"errors"
	"fmt"
	"time"

	"github.com/mushroomdb/bucketlease/lease/admin"
)

// EnvConditional=off runs the lease best-effort on a service without working
// conditional writes; unset, empty or "on" is conditional, anything else an
// error.
const EnvConditional = "MUSHROOMDB_BACKUP_LEASE_CONDITIONAL"

var (
	// ErrHeld: another instance holds the lease (a *HeldError).
	ErrHeld = errors.New("lease held by another instance")
	// ErrLost: the lease object was taken over, removed, broken or released by
	// someone else. The holder must stop writing.
	ErrLost = errors.New("lease lost to another instance")
	// ErrFenced: no renewal succeeded for two thirds of a TTL, so the holder
	// stopped writing before anyone could take over. Acquiring again with the
	// same Contender takes the record back at once.
	ErrFenced = errors.New("lease fenced: not renewed in time")
	// ErrReleased: the lease was released; nothing more may be written under it.
	ErrReleased = errors.New("lease released")
	// ErrInstanceInUse: another live process holds the lease under this
	// instance id. Retrying does not help; give each process its own id.
	ErrInstanceInUse = errors.New("another live process uses this instance id")
	// ErrPreconditionsIgnored: the service accepted a write whose precondition
	// failed, refused one whose precondition held, or its driver declares no
	// exclusion. Acquire fails closed with it.
	ErrPreconditionsIgnored = errors.New("the service ignores write preconditions")
	// ErrWritesInFlight: writes through Lease.Bucket had not returned when
	// Release's context ended, so the lease was not marked released (a cancelled
	// write could still land); call Release again with more time, or let it go
	// stale.
	ErrWritesInFlight = errors.New("writes under the lease still in flight")
	// ErrClock: the wall clock is more than a third of a TTL off, stepped back
	// against the latest record stamped or the monotonic clock, or provably off
	// the service's clock. Acquire refuses with it; a holder fences itself
	// (ErrFenced wrapping ErrClock).
	ErrClock = errors.New("the wall clock is not to be trusted")
)

// HeldError is Acquire's error when another instance holds the lease;
// errors.Is(err, ErrHeld) matches it.
type HeldError struct {
	// Status is the lease as found: State Fresh or Suspect, and TakeoverAt
	// the earliest takeover by this instance's wall clock.
	admin.Status
	// SameID: a fresh record names this instance's id but this process did
	// not write it (a restart, or another process with the same id). It is
	// taken over once stale; if it changes meanwhile, ErrInstanceInUse.
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

// renewedText says "renewed 5s ago", or "stamped 5s in the future".
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
