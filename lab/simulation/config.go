package simulation

// What a run is given and what it reports: Config, Deviation, Result and
// the invariants.

import (
	"fmt"
	"time"

	"github.com/mushroomdb/bucketlease/lab/chaos/register"
)

// StoreMode selects how honest the simulated store is.
type StoreMode int

const (
	// Honest: a linearizable store that enforces every precondition.
	Honest StoreMode = iota
	// IgnoresDataPreconditions enforces preconditions on the LEASE object
	// and the scratch keys beside it (so the lease's proofs, which test
	// those, pass) but ignores
	// them on every other key: the worker's objects, manifests and LATEST.
	// It is a negative control: the data invariants must catch it.
	IgnoresDataPreconditions
)

// Config describes one simulated run.
type Config struct {
	Seed      uint64
	Instances int           // default 3
	TTL       time.Duration // default 30s
	Tick      time.Duration // the simulation's time step; default 250ms
	// MaxSkew is the width of the envelope in which every wall clock's
	// offset from true time stays. Default TTL/3, the spec's bound.
	MaxSkew time.Duration
	Rounds  int // chaos phases, each followed by a takeover drill; default 3
	// ChaosTicks is the length of each chaos phase; default 5 TTLs.
	ChaosTicks int
	// NoFaults turns request and instance faults off (clocks still skew,
	// drift and jump).
	NoFaults bool
	Store    StoreMode
	// WorkerIgnoresFence makes the worker write while it believes it holds
	// the lease (until it sees ErrLost), ignoring MayWrite: a negative
	// control for the self-fence.
	WorkerIgnoresFence bool
	// Force, when not zero, is the set of deviation classes on in every
	// run, and no other is; when zero, each class is on or off by the seed
	// (see Deviation). Negative controls force the class whose old,
	// trusting behaviour they restore, and only it.
	Force Deviation
	// Exclude is a set of deviation classes never on in this run (unless
	// forced): a negative control aimed at something else leaves out the
	// classes that would find another violation first.
	Exclude Deviation
	// Trace records every step; Result.Trace returns it.
	Trace bool
	// History records every request that reached the LEASE object;
	// Result.LeaseOps returns them, for register.Check.
	History bool
	// NoServiceTime makes the store's answers say nothing of its clock,
	// as a third party's driver that reports no service time: the lease
	// then judges records, and floors epochs, on the machines' clocks
	// alone. A clock wrong from the start (ClockWrongFromStart) cannot be
	// seen that way, and an epoch after a deleted LEASE
	// (LeaseDeletedAfterRelease) may be up to the clocks' skew below an
	// earlier one (docs/promises.md, "Epochs"): a run with it leaves both
	// classes out.
	NoServiceTime bool

	// siblingsRunWhileFrozen restores the simulator's old world, in which
	// a process started beside another on its machine (restart-while-
	// running) went on running while that machine was frozen, with its
	// monotonic clock standing still: the negative control of InvWorld.
	siblingsRunWhileFrozen bool
	// siblingContendsLate: a process started beside another on its
	// machine (restart-while-running) makes its first Acquire a TTL
	// after it started, not at once: it read its clocks when it made its
	// Contender, and has stamped nothing since.
	siblingContendsLate bool
}

// Deviation is a class of what real services, machines and operators do
// that the lease must not trust away. Every run has every class on, each
// picked or not by the seed; Config.Force makes a class certain.
type Deviation uint

const (
	// StoreIgnoresDeleteCondition: the store deletes whatever is there on
	// a DELETE with If-Match, although it declares a conditional delete
	// (MinIO, gofakes3, fake-gcs-server).
	StoreIgnoresDeleteCondition Deviation = 1 << iota
	// StoreDeletesMissingOK: a DELETE with If-Match on a missing key
	// succeeds.
	StoreDeletesMissingOK
	// StoreIfMatchMissingCreates: a PUT with If-Match on a missing key is
	// stored as if unconditional.
	StoreIfMatchMissingCreates
	// Twins: two instances are configured with one instance id and both
	// run throughout.
	Twins
	// RestartWhileRunning: an instance restarts with the same id while
	// its old process still runs for a while.
	RestartWhileRunning
	// ReleaseOldLease: an instance that was fenced contends again and
	// later releases its old, fenced *Lease.
	ReleaseOldLease
	// ReleaseDuringHungRenewal: an instance releases (with a deadline
	// that has passed) while its renewal hangs in the network.
	ReleaseDuringHungRenewal
	// CoarseWallClock: an instance's wall clock reads whole seconds.
	CoarseWallClock
	// StuckWallClock: an instance's wall clock stands still for a while
	// (inside the skew envelope), then catches up.
	StuckWallClock
	// PathDropsIfNoneMatch: for a while, an instance's path to the store
	// (a proxy, a gateway, an old client) drops If-None-Match from the
	// lease's own writes (the lease object and its scratch keys), either
	// from every PUT or only from the first PUT of each Acquire. The
	// worker's writes keep theirs: a path that drops the condition of a
	// data write lets any late writer overwrite, lease or no lease, and
	// the lease cannot see it (campaign seed 208086 shows that: a paused
	// stale holder's LATEST write, sent on such a path).
	PathDropsIfNoneMatch
	// BreakDropsIfMatch: an operator, having looked at the lease when its
	// holder was dead, calls lease.Break on that version later, through a
	// path that drops If-Match.
	BreakDropsIfMatch
	// SlowWriteOutlivesRelease: a shutdown (Release) arrives while a write
	// through Lease.Bucket is in flight on a driver that does not honour
	// cancellation once the write has started; the write lands a few
	// seconds later.
	SlowWriteOutlivesRelease
	// WallClockBackAnHour: the holder's wall clock steps back by an hour
	// (NTP correcting it, a VM restored) and steps forward again one to
	// three TTLs later.
	WallClockBackAnHour
	// StateDirectory: every process keeps a state directory
	// (lease.Options.StateDir) on its machine's disk, one per machine: a
	// process restarted on its machine (after a crash, or beside its
	// still-running or stopped predecessor) finds its predecessor's
	// journal and lock, and twins on two machines have one each. A process
	// that dies drops its lock at once, as the kernel drops a flock.
	StateDirectory
	// ClockWrongFromStart: one machine's wall clock is wrong, from before
	// its first process started, by a fixed offset far outside the skew
	// envelope: ahead or behind by three TTLs up to a day (drawn from the
	// seed). Its drift, jumps and stuck spells stay on, inside an envelope
	// of width MaxSkew around that offset; every process on the machine
	// (a restart, one started beside another) reads the same wrong clock.
	// Nothing the lease stamped or saw before can reveal it: only the
	// service's clock (driver.ServiceTime) can. The store's clock is true
	// time. Such a process must never hold the lease (InvClock): Acquire
	// refuses it with lease.ErrClock.
	ClockWrongFromStart
	// LeaseDeletedAfterRelease: an operator or a sync tool deletes the
	// LEASE object a process released (it is no longer anyone's), so the
	// next acquire finds the prefix free and the epoch's chain broken: its
	// epoch must come from the service's clock and still be greater than
	// the released holder's (InvEpoch), at every resolution of the
	// store's clock, within one of its ticks.
	LeaseDeletedAfterRelease
)

// deviationNames are the classes' names, in bit order.
var deviationNames = []string{"store-ignores-delete-condition", "store-deletes-missing-ok", "store-if-match-missing-creates",
	"twins", "restart-while-running", "release-old-lease", "release-during-hung-renewal", "coarse-wall-clock", "stuck-wall-clock",
	"path-drops-if-none-match", "break-drops-if-match", "slow-write-outlives-release", "wall-clock-back-an-hour", "state-directory", "clock-wrong-from-start",
	"lease-deleted-after-release"}

func (c *Config) defaults() {
	if c.Instances == 0 {
		c.Instances = 3
	}
	if c.TTL == 0 {
		c.TTL = 30 * time.Second
	}
	if c.Tick == 0 {
		c.Tick = 250 * time.Millisecond
	}
	if c.MaxSkew == 0 {
		c.MaxSkew = c.TTL / 3
	}
	if c.Rounds == 0 {
		c.Rounds = 3
	}
	if c.ChaosTicks == 0 {
		c.ChaosTicks = int(5 * c.TTL / c.Tick)
	}
}

// Result is what a run found.
type Result struct {
	Seed uint64
	// Violation is the first invariant broken, or nil.
	Violation *Violation
	// Faults counts the faults injected, by kind.
	Faults map[string]int
	// Takeovers are the measured times from a holder's death or cut-off to
	// a live contender holding the lease, one per drill.
	Takeovers []time.Duration
	// Bound is the liveness bound the takeovers were held to.
	Bound time.Duration
	// TTL is the run's lease TTL.
	TTL time.Duration
	// Acquisitions counts successful acquires (lease epochs).
	Acquisitions int
	// Adoptions counts acquires that adopted the lease a dead predecessor
	// of the same instance left, through the state directory.
	Adoptions int
	// ClockRefused counts acquires that failed with lease.ErrClock, and
	// WrongClockRefused those of them made on a machine whose clock was
	// wrong from the start (ClockWrongFromStart). ClockFenced counts
	// renewals that fenced the holder with lease.ErrClock.
	ClockRefused, WrongClockRefused, ClockFenced int
	// WrongClock is how far the wall clock of the machine whose clock was
	// wrong from the start was off (ClockWrongFromStart); 0 when none was.
	WrongClock time.Duration
	// Resolution is the resolution of the store's clock in this run: the
	// times it reports (driver.ServiceTime) are truncated to it.
	Resolution time.Duration
	// Backups counts LATEST writes that landed.
	Backups int
	// ServiceTimes counts the store's answers that told their caller the
	// store's clock (a driver.ServiceTime with a Date); none with
	// Config.NoServiceTime.
	ServiceTimes int
	// SimTime is the simulated time the run covered.
	SimTime time.Duration
	Trace   []string
	// LeaseOps is the LEASE object's history (Config.History).
	LeaseOps []register.Op
}

// Violation is a broken invariant.
type Violation struct {
	Invariant string
	At        time.Duration // true time since the start
	Detail    string
}

func (v *Violation) Error() string {
	return fmt.Sprintf("%s at t=%v: %s", v.Invariant, v.At, v.Detail)
}

// The invariants.
const (
	InvExclusion = "exclusion"  // at most one instance may write at any instant
	InvLatest    = "latest"     // LATEST never moves back to a stale holder's manifest
	InvIntegrity = "integrity"  // LATEST's manifest and everything it names are intact
	InvImmutable = "immutable"  // no immutable object is written twice
	InvLostReply = "lost-reply" // no ErrLost for a lease the instance still holds
	InvLiveness  = "liveness"   // a live contender takes over within the bound
	InvRelease   = "release"    // Release stops writing at once, honours its context, and nothing it cancelled lands after it returns
	InvHang      = "hang"       // every lease call returns
	InvPanic     = "panic"
	// InvClock: a process on a machine whose wall clock is wrong from its
	// start (ClockWrongFromStart: by at least three TTLs, far more than a
	// third of a TTL plus the longest round trip the simulated network
	// makes plus the store's resolution, so the offset is always provable
	// from one answer) never has MayWrite true: Acquire refuses it.
	InvClock = "clock"
	// InvEpoch: every lease Acquire grants has an epoch greater than that
	// of every lease granted before it, across takeovers, releases,
	// breaks, restarts and deletes of the LEASE object, and its record
	// carries it.
	InvEpoch = "epoch"
	// InvWorld: the simulated world stays one that can exist; no process
	// on a frozen machine sends a request. A violation is a simulator bug.
	InvWorld = "world"
)

// hangLimit is how much simulated time a lease call may take before it
// counts as hung.
func (c *Config) hangLimit() time.Duration { return 10 * c.TTL }
