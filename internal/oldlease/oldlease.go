// Package oldlease switches parts of package lease back to behaviour it had
// before a safety fix, so that a negative control can show that a checker
// (the simulator, the chaos checker, a regression test) finds the old
// behaviour. It is internal: no user of the module can import it, and every
// switch is off unless a test turns it on.
//
// The switches are process-wide on purpose: a negative control sets one
// before it starts and clears it when it ends; nothing else writes them. Do
// not set them from tests that run in parallel with others.
package oldlease

import "sync/atomic"

var (
	// DeleteOnRelease: Release and the failed-probe clean-up delete the
	// lease object with If-Match where the driver declares
	// ConditionalDelete, trusting the declaration (defect 1 of issue 11).
	DeleteOnRelease atomic.Bool

	// AdoptByInstanceID: any record naming our instance id is taken as our
	// own (acquire takes it back at once, renewal and release adopt it),
	// instead of only a record this lease provably wrote (defects 2 and 3).
	AdoptByInstanceID atomic.Bool

	// EqualRenewedAtIsProof: a read-back record with the renewed_at we sent
	// proves that our write landed, even when the stored version did not
	// change (defect 7).
	EqualRenewedAtIsProof atomic.Bool

	// BestEffortByDeclaration: a driver that declares BestEffort runs
	// best-effort without the switch and without a warning (defect 4).
	BestEffortByDeclaration atomic.Bool

	// ReleaseWaitsForRenewal: Release waits for a renewal in flight before
	// it stops writing, ignoring its context (defect 6).
	ReleaseWaitsForRenewal atomic.Bool

	// SkipProbe: Acquire does not probe the service's preconditions, so a
	// service that ignores them is trusted (for the chaos checker's
	// negative control).
	SkipProbe atomic.Bool
)
