// Package oldlease switches parts of package lease back to behaviour it had
// before a safety fix, so that a negative control can show that a checker
// (the simulator, the chaos checker, a regression test) finds the old
// behaviour.
//
// The switches exist only in a build with the tag bucketlease_oldlease,
// which the test command sets for its negative controls. In every other
// build (the module as users build it, the shipped command) each switch is a
// constant false, so the compiler removes the old behaviour from the
// lease's safety path altogether: no binary of a user's has a path that
// skips the probe. Tests that turn a switch on carry the build tag too.
//
// The switches are process-wide on purpose: a negative control sets one
// before it starts and clears it when it ends; nothing else writes them. Do
// not set them from tests that run in parallel with others.
package oldlease

var (
	// DeleteOnRelease: Release and the failed-probe clean-up delete the
	// lease object with If-Match where the driver declares
	// ConditionalDelete, trusting the declaration.
	DeleteOnRelease Switch

	// AdoptByInstanceID: any record naming our instance id is taken as our
	// own (acquire takes it back at once, renewal and release adopt it),
	// instead of only a record this lease provably wrote.
	AdoptByInstanceID Switch

	// EqualRenewedAtIsProof: a read-back record with the renewed_at we sent
	// proves that our write landed, even when the stored version did not
	// change.
	EqualRenewedAtIsProof Switch

	// BestEffortByDeclaration: a driver that declares BestEffort runs
	// best-effort without the switch and without a warning.
	BestEffortByDeclaration Switch

	// ReleaseWaitsForRenewal: Release waits for a renewal in flight before
	// it stops writing, ignoring its context.
	ReleaseWaitsForRenewal Switch

	// SkipProbe: Acquire does not probe the service's preconditions, so a
	// service that ignores them is trusted.
	SkipProbe Switch

	// ReleaseDoesNotWait: Release writes the released record at once,
	// without waiting for the writes through Lease.Bucket that it
	// cancelled to return.
	ReleaseDoesNotWait Switch

	// UnprovenFirstWrite: Acquire's first write is If-None-Match: * on the
	// lease object itself, before anything has shown that the path honours
	// it, and a refused acquire's clean-up marks what it wrote released.
	UnprovenFirstWrite Switch

	// FirstWriteBeforeProof: Acquire reads first, but its first write to
	// the lease object goes out before a scratch key has shown that the
	// path applies preconditions.
	FirstWriteBeforeProof Switch

	// BreakWithoutRead: Break sends its If-Match write beside the
	// made-up-version probe, before the probe's refusal is known.
	BreakWithoutRead Switch

	// StampThroughClockJump: a holder whose wall clock stepped back keeps
	// stamping renewed_at as its previous stamp plus a nanosecond, instead
	// of fencing itself.
	StampThroughClockJump Switch

	// ContenderTrustsItsClock: a contender checks its wall clock only
	// against the records it stamped, so one that has stamped none (a
	// process started beside a holder) trusts a clock that stepped back
	// since it last read it.
	ContenderTrustsItsClock Switch

	// StateIgnoresLock: a contender with a StateDir reads its
	// predecessors' records without holding the lock, so it adopts a
	// record that a live (stopped) process wrote.
	StateIgnoresLock Switch
)
