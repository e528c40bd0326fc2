// Package simulation is a seeded, deterministic simulator for the lease. It
// runs the real lease code (lease.Contender and lease.Lease, driven step by
// step from one loop: Acquire, Renew, MayWrite, Release, never Keep) for
// several instances on one prefix, each on its own clock.Fake, against a
// linearizable in-memory conditional store (driver/mem) that injects faults
// chosen from the seed. It checks the spec's promises at every simulated
// instant and reports the first violation with its seed; Run with
// Config.Trace replays a seed and returns the full trace.
//
// Time. There is one true time. Every instance's wall clock reads true time
// plus an offset that stays inside an envelope of width Config.MaxSkew (the
// offset drifts, and jumps forwards and backwards, inside it); its
// monotonic clock runs at its own rate (0.9 to 1.1 of true time) and stands
// still while the instance is suspended. A request the store delays lets
// true time pass for everyone while the requester waits.
//
// Faults, each chosen by the seed: a request dropped before the store
// applies it; applied but its reply lost (an unknown-outcome error, or the
// refusal a client's retry would get); answered with a server error;
// delayed; an instance partitioned from the store for a while; an instance
// suspended (monotonic clock frozen, wall clock running); an instance paused
// between its fence check and its write (MayWrite true, then the machine
// freezes, then the write is sent); an instance crashing and restarting with
// the same or a new instance id; an instance releasing and leaving for a
// while.
//
// The lease sends some requests from its own goroutines (the probes). Fault
// decisions are a hash of (seed, instance, incarnation, lease call, request
// identity, occurrence), not of arrival order, and requests from goroutines
// other than the simulation's are never delayed, so that a run is the same
// whatever the Go scheduler does.
package simulation

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/mushroomdb/bucketlease/clock"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/mem"
	"github.com/mushroomdb/bucketlease/lease"
)

// StoreMode selects how honest the simulated store is.
type StoreMode int

const (
	// Honest: a linearizable store that enforces every precondition.
	Honest StoreMode = iota
	// IgnoresDataPreconditions enforces preconditions on the LEASE object
	// (so the lease's probe, which tests that object, passes) but ignores
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
	// Trace records every step; Result.Trace returns it.
	Trace bool
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
)

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
	// Backups counts LATEST writes that landed.
	Backups int
	// SimTime is the simulated time the run covered.
	SimTime time.Duration
	Trace   []string
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
	InvRelease   = "release"    // Release stops writing at once and honours its context
	InvPanic     = "panic"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

const prefix = "db1"

var leaseKey = lease.Key(prefix)

// sim is one run's world.
type sim struct {
	cfg   Config
	rng   *rand.Rand
	store *mem.Bucket
	mainG uint64
	now   time.Duration // true time since t0
	insts []*inst
	res   Result
	calm  bool // no new faults (a takeover drill)
	done  bool // a violation was found
	dirty bool // a write to the worker's keys landed since the last integrity check

	epoch          int // lease epochs handed out so far
	maxLatestEpoch int
	written        map[string]string        // immutable key -> writer tag
	leaseWriters   map[driver.Version]*inst // LEASE version -> the process whose write made it

	drill *drill
	dev   Deviation // the deviation classes on in this run
	extra int       // instances started beside the configured ones

	mu    sync.Mutex // guards trace, faults and per-instance request state
	trace []string
}

type drill struct {
	start  time.Duration
	victim *inst
	how    string
}

// Run simulates one seed.
func Run(cfg Config) (res Result) {
	cfg.defaults()
	s := &sim{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, 0x5eed)), store: mem.New(), mainG: goid(),
		written: map[string]string{}, leaseWriters: map[driver.Version]*inst{}}
	s.res = Result{Seed: cfg.Seed, Faults: map[string]int{}, TTL: cfg.TTL}
	s.res.Bound = cfg.TTL + cfg.TTL/3 + retryInterval(cfg.TTL) + cfg.MaxSkew + 2*cfg.Tick
	defer func() {
		if p := recover(); p != nil {
			if _, ok := p.(stop); !ok {
				buf := make([]byte, 8<<10)
				buf = buf[:runtime.Stack(buf, false)]
				s.violate(InvPanic, fmt.Sprintf("%v\n%s", p, buf), false)
			}
		}
		s.res.SimTime = s.now
		s.res.Trace = s.trace
		s.res.Acquisitions = s.epoch
		res = s.res
	}()
	s.dev = s.pickDeviations()
	if cfg.Force != 0 {
		s.dev = cfg.Force
	}
	for i := range cfg.Instances {
		in := &inst{s: s, idx: i, name: string(rune('A' + i))}
		in.wallRate = 1 + (s.rng.Float64()*2-1)*0.01
		in.monoRate = 0.9 + s.rng.Float64()*0.2
		in.offset = s.lo() + time.Duration(s.rng.Int64N(int64(cfg.MaxSkew)+1))
		in.clk = clock.NewFake(t0.Add(in.offset))
		in.coarse = s.dev&CoarseWallClock != 0 && (i < 2 || s.rng.IntN(2) == 0)
		if in.coarse {
			s.fault("coarse-wall-clock")
		}
		id := fmt.Sprintf("%s-%d", in.name, 1)
		if i == 1 && s.dev&Twins != 0 {
			id = s.insts[0].id
			s.fault("twins")
		}
		in.start(id)
		s.insts = append(s.insts, in)
		s.tracef("%s starts: offset %v, wall drift %+.3f%%, mono rate %.3f, coarse wall clock %v", in, in.offset, (in.wallRate-1)*100, in.monoRate, in.coarse)
	}
	if d := s.dev & storeDeviations; d != 0 {
		s.fault(d.String()) // the class is on for the whole run
		s.tracef("the store deviates: %s", d)
	}
	for range cfg.Rounds {
		s.calm = cfg.NoFaults
		s.advance(time.Duration(cfg.ChaosTicks) * cfg.Tick)
		s.runDrill()
	}
	return s.res
}

const storeDeviations = StoreIgnoresDeleteCondition | StoreDeletesMissingOK | StoreIfMatchMissingCreates

// pickDeviations chooses, from the seed, which deviation classes are on in
// this run: at most one store deviation, and each other class in about one
// run in three (the per-event ones then fire at random within the run).
func (s *sim) pickDeviations() Deviation {
	var d Deviation
	switch s.rng.IntN(6) {
	case 0:
		d |= StoreIgnoresDeleteCondition
	case 1:
		d |= StoreDeletesMissingOK
	case 2:
		d |= StoreIfMatchMissingCreates
	}
	for _, c := range []Deviation{Twins, RestartWhileRunning, ReleaseOldLease, ReleaseDuringHungRenewal, CoarseWallClock, StuckWallClock} {
		if s.rng.IntN(3) == 0 {
			d |= c
		}
	}
	return d
}

// String names the classes in d.
func (d Deviation) String() string {
	names := []string{"store-ignores-delete-condition", "store-deletes-missing-ok", "store-if-match-missing-creates",
		"twins", "restart-while-running", "release-old-lease", "release-during-hung-renewal", "coarse-wall-clock", "stuck-wall-clock"}
	var on []string
	for i, n := range names {
		if d&(1<<i) != 0 {
			on = append(on, n)
		}
	}
	if len(on) == 0 {
		return "none"
	}
	return strings.Join(on, ",")
}

// stop unwinds the simulation after a violation.
type stop struct{}

func (s *sim) lo() time.Duration { return -s.cfg.MaxSkew / 2 }

func retryInterval(ttl time.Duration) time.Duration { return max(ttl/15, 100*time.Millisecond) }

func (s *sim) tracef(format string, args ...any) {
	if !s.cfg.Trace {
		return
	}
	line := fmt.Sprintf("t=%-9v ", s.now) + fmt.Sprintf(format, args...)
	s.mu.Lock()
	s.trace = append(s.trace, line)
	s.mu.Unlock()
}

func (s *sim) fault(kind string) {
	s.mu.Lock()
	s.res.Faults[kind]++
	s.mu.Unlock()
}

// violate records the first violation and unwinds the run.
func (s *sim) violate(inv, detail string, unwind bool) {
	if s.res.Violation == nil {
		s.res.Violation = &Violation{Invariant: inv, At: s.now, Detail: detail}
		s.tracef("VIOLATION %s: %s", inv, detail)
	}
	s.done = true
	if unwind {
		panic(stop{})
	}
}

// advance lets d of true time pass, tick by tick. It is reentrant: a
// delayed request calls it while its requester waits.
func (s *sim) advance(d time.Duration) {
	target := s.now + d
	for s.now < target {
		s.tick()
	}
}

// tick moves every clock one step, injects faults and lets every instance
// that is not waiting on a request act.
func (s *sim) tick() {
	s.now += s.cfg.Tick
	for _, in := range s.insts {
		if in.machine == nil {
			in.moveClock(s.cfg.Tick)
		}
	}
	s.check()
	if !s.calm {
		for _, in := range s.insts {
			in.chaos()
		}
	}
	for _, in := range s.insts {
		if !in.busy {
			in.act()
			s.check()
		}
	}
}

// check verifies the invariants that hold at every instant.
func (s *sim) check() {
	var open []*inst
	for _, in := range s.insts {
		if in.gateOpen() {
			open = append(open, in)
		}
	}
	if len(open) > 1 {
		names := make([]string, len(open))
		for i, in := range open {
			names[i] = fmt.Sprintf("%s (epoch %d)", in, in.epoch)
		}
		s.violate(InvExclusion, "instances that may write at once: "+strings.Join(names, ", "), true)
	}
	s.checkIntegrity()
}

// runDrill kills or cuts off the instance the LEASE object names, calms the
// world, and measures how long a live contender takes to hold the lease.
func (s *sim) runDrill() {
	victim := s.drillVictim()
	s.calm = true
	d := &drill{start: s.now, victim: victim}
	for _, in := range s.insts {
		if in == victim {
			continue
		}
		in.heal()
	}
	if victim != nil {
		if s.rng.IntN(2) == 0 {
			d.how = "crashed"
			victim.crash(time.Hour, false)
		} else {
			d.how = "cut off"
			victim.heal()
			victim.partitioned = true
			victim.partitionUntil = s.now + time.Hour
		}
		s.tracef("drill: %s %s; measuring the takeover", victim, d.how)
	} else {
		s.tracef("drill: no live holder named; measuring the next acquire")
	}
	s.drill = d
	limit := s.res.Bound + s.cfg.TTL
	for s.drill != nil && s.now-d.start <= limit {
		s.tick()
	}
	if s.drill != nil {
		s.violate(InvLiveness, fmt.Sprintf("no live contender held the lease %v after the holder %s", limit, d.how), true)
	}
	if victim != nil {
		victim.heal()
		if victim.down {
			victim.restartAt = s.now
		}
	}
}

// drillVictim is the live process the LEASE object names, or nil. With two
// processes on one id, it is the one whose write made the stored version,
// as the store saw it: its Lease may not know yet (a renewal whose reply was
// lost, seed 300021). Else the one whose lease knows that version, or one
// that holds a lease at all.
func (s *sim) drillVictim() *inst {
	rec, ok := s.storedRecord()
	if !ok {
		return nil
	}
	_, v, _ := readAll(s, leaseKey)
	s.mu.Lock()
	writer := s.leaseWriters[v]
	s.mu.Unlock()
	if writer != nil && !writer.gone && writer.id == rec.InstanceID {
		return writer
	}
	var victim *inst
	best := 0
	for _, in := range s.insts {
		if in.gone || in.id != rec.InstanceID {
			continue
		}
		score := 1
		if in.lease != nil && in.lease.Err() == nil {
			score = 2
			if in.lease.Version() == v {
				score = 3
			}
		}
		if score > best {
			victim, best = in, score
		}
	}
	return victim
}

// acquired is called when in takes the lease; it ends a drill if in is a
// live contender.
func (s *sim) acquired(in *inst) {
	d := s.drill
	if d == nil || in == d.victim {
		return
	}
	took := s.now - d.start
	s.res.Takeovers = append(s.res.Takeovers, took)
	s.tracef("drill: %s holds the lease %v after the holder was %s (bound %v)", in, took, d.how, s.res.Bound)
	s.drill = nil
	if took > s.res.Bound {
		s.violate(InvLiveness, fmt.Sprintf("takeover took %v, over the bound %v", took, s.res.Bound), true)
	}
}

// storedRecord reads the LEASE object straight from the store.
func (s *sim) storedRecord() (lease.Record, bool) {
	data, _, err := driver.ReadAll(context.Background(), s.store, leaseKey, lease.MaxRecordSize)
	if err != nil {
		return lease.Record{}, false
	}
	r, err := lease.DecodeRecord(data)
	return r, err == nil
}

// inst is one instance: a machine with a clock, running the lease and a
// backup worker. It keeps its machine (clock) across process restarts.
type inst struct {
	s        *sim
	idx      int
	name     string
	id       string
	inc      int // process incarnation
	clk      *clock.Fake
	offset   time.Duration // wall minus true time
	wallRate float64
	monoRate float64
	monoFrac float64

	contender *lease.Contender
	lease     *lease.Lease
	oldLease  *lease.Lease  // a fenced lease it will release later (ReleaseOldLease)
	releaseAt time.Duration // true time of that release
	leaving   bool          // Release was asked during a hung renewal

	coarse     bool          // the wall clock reads whole seconds (CoarseWallClock)
	stuckUntil time.Duration // true time until which the wall clock stands still
	machine    *inst         // the instance whose machine (clock) this process shares
	exitAt     time.Duration // true time at which this old process exits for good
	gone       bool          // an old process that has exited for good
	epoch      int
	renewAt    time.Duration // on the instance's monotonic clock
	retryAt    time.Duration // true time of the next acquire attempt
	busy       bool

	down           bool
	restartAt      time.Duration
	newID          bool
	suspendedUntil time.Duration
	partitioned    bool
	partitionUntil time.Duration
	paused         *pendingWrite

	work  *cycle
	nextW time.Duration
	tags  int

	// request identity bookkeeping for the current lease call
	call int
	occ  map[string]int
	gbuf []string
}

// hasTwin reports whether another running process uses in's instance id;
// then a record naming the id may be the other's.
func (in *inst) hasTwin() bool {
	for _, o := range in.s.insts {
		if o != in && !o.gone && o.id == in.id {
			return true
		}
	}
	return false
}

func (in *inst) String() string { return fmt.Sprintf("%s[%s]", in.name, in.id) }

func (in *inst) start(id string) {
	in.inc++
	in.leaving, in.oldLease = false, nil
	in.id = id
	in.down = false
	in.lease = nil
	in.epoch = 0
	in.work = nil
	in.paused = nil
	in.retryAt = in.s.now
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	var clk clock.Clock = in.clk
	if in.coarse {
		clk = coarseClock{in.clk}
	}
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[:], hash(in.s.cfg.Seed, "|rand|", in.idx, "|", in.inc))
	c, err := lease.NewContender(in.conn(), prefix, &lease.Options{
		TTL: in.s.cfg.TTL, InstanceID: id, Clock: clk, Logger: logger,
		Getenv:  func(string) string { return "" },
		OnEvent: in.onEvent,
		Rand:    rand.NewChaCha8(seed),
	})
	if err != nil {
		panic(err)
	}
	in.contender = c
}

func (in *inst) onEvent(e lease.Event) {
	if e.Kind == lease.EventRenewed {
		return
	}
	detail := e.Detail
	if e.Err != nil {
		detail += " " + e.Err.Error()
	}
	in.s.tracef("%s event %s v=%s %s", in, e.Kind, e.Version, detail)
}

// moveClock advances the instance's clocks by one tick of true time.
func (in *inst) moveClock(d time.Duration) {
	s := in.s
	suspended := s.now <= in.suspendedUntil
	var wallStep time.Duration
	if s.now < in.stuckUntil && in.offset-d >= s.lo() {
		// The wall clock stands still: its offset from true time falls,
		// and the episode ends before the offset leaves the envelope.
		in.offset -= d
	} else {
		in.stuckUntil = 0
		// The wall clock drifts inside the envelope, reflecting at its edges.
		drift := time.Duration(float64(d) * (in.wallRate - 1))
		next := in.offset + drift
		if next < s.lo() || next > s.lo()+s.cfg.MaxSkew {
			in.wallRate = 2 - in.wallRate
			next = in.offset - drift
		}
		next = min(max(next, s.lo()), s.lo()+s.cfg.MaxSkew)
		wallStep = d + next - in.offset
		in.offset = next
	}
	if suspended {
		in.clk.AdvanceWall(wallStep)
		return
	}
	in.monoFrac += float64(d) * in.monoRate
	mono := time.Duration(in.monoFrac)
	in.monoFrac -= float64(mono)
	in.clk.AdvanceMono(mono)
	in.clk.AdvanceWall(wallStep)
}

// coarseClock is a wall clock that reads whole seconds.
type coarseClock struct{ *clock.Fake }

func (c coarseClock) Wall() time.Time { return c.Fake.Wall().Truncate(time.Second) }

// jumpWall steps the wall clock to a new offset inside the envelope.
func (in *inst) jumpWall() {
	s := in.s
	to := s.lo() + time.Duration(s.rng.Int64N(int64(s.cfg.MaxSkew)+1))
	kind := "wall-jump-forward"
	if to < in.offset {
		kind = "wall-jump-backward"
	}
	s.fault(kind)
	s.tracef("%s wall clock jumps %v", in, to-in.offset)
	in.clk.AdvanceWall(to - in.offset)
	in.offset = to
}

// chaos injects instance faults at random.
func (in *inst) chaos() {
	s := in.s
	if in.gone || in.machine != nil {
		return // an exited process, or one that shares another's machine
	}
	r := s.rng.Float64()
	const p = 0.0008
	switch {
	case r < 4*p:
		in.jumpWall()
	case r < 4.5*p && s.dev&StuckWallClock != 0 && s.now >= in.stuckUntil:
		in.stuckUntil = s.now + s.randDur(s.cfg.MaxSkew)
		s.fault("stuck-wall-clock")
		s.tracef("%s wall clock stands still until t=%v at the latest", in, in.stuckUntil)
	case r < 4.8*p && s.dev&RestartWhileRunning != 0 && s.extra < 2 && !in.down && !in.busy:
		in.restartWhileRunning()
	case in.busy || in.down:
	case r < 5*p && s.now > in.suspendedUntil:
		d := s.randDur(3 * s.cfg.TTL / 2)
		in.suspendedUntil = s.now + d
		s.fault("suspend")
		s.tracef("%s suspended for %v (monotonic clock frozen)", in, d)
	case r < 6*p && !in.partitioned:
		d := s.randDur(2 * s.cfg.TTL)
		in.partitioned, in.partitionUntil = true, s.now+d
		s.fault("partition")
		s.tracef("%s partitioned from the store for %v", in, d)
	case r < 6.8*p:
		in.crash(s.randDur(s.cfg.TTL), s.rng.IntN(2) == 0)
	case r < 7.2*p && in.lease != nil:
		in.busy = true
		in.beginCall()
		err := in.lease.Release(context.Background())
		in.endCall()
		in.busy = false
		s.fault("release-and-leave")
		s.tracef("%s releases (err=%v) and leaves", in, err)
		in.down, in.restartAt, in.newID = true, s.now+s.randDur(s.cfg.TTL), false
		in.lease, in.work, in.paused = nil, nil, nil
	}
	if in.partitioned && s.now >= in.partitionUntil && !in.busy {
		in.partitioned = false
		s.tracef("%s partition heals", in)
	}
}

func (s *sim) randDur(max time.Duration) time.Duration {
	return time.Duration(s.rng.Int64N(int64(max/s.cfg.Tick))+1) * s.cfg.Tick
}

// restartWhileRunning starts a second process of this instance, with the
// same id on the same machine, while the old one keeps running for up to
// two TTLs before it exits: a supervisor that restarted a process it
// believed dead.
func (in *inst) restartWhileRunning() {
	s := in.s
	s.extra++
	s.fault("restart-while-running")
	nw := &inst{s: s, idx: len(s.insts), name: fmt.Sprintf("%s%d", in.name, s.extra+1), clk: in.clk, machine: in, coarse: in.coarse}
	nw.start(in.id)
	s.insts = append(s.insts, nw)
	exit := s.randDur(2 * s.cfg.TTL)
	in.exitAt = s.now + exit
	s.tracef("%s starts beside the still-running %s with the same id; the old one exits in %v", nw, in, exit)
}

// crash kills the process: its lease, its worker and any paused write die
// with it. It restarts after d, with a new instance id if newID.
func (in *inst) crash(d time.Duration, newID bool) {
	s := in.s
	if newID {
		s.fault("crash-restart-new-id")
	} else {
		s.fault("crash-restart-same-id")
	}
	s.tracef("%s crashes; restarts in %v (new id: %v)", in, d, newID)
	in.down, in.restartAt, in.newID = true, s.now+d, newID
	in.lease, in.work, in.paused = nil, nil, nil
	in.suspendedUntil = 0
}

// heal ends the instance's suspension and partition (for a drill).
func (in *inst) heal() {
	in.partitioned = false
	if in.suspendedUntil > in.s.now {
		in.suspendedUntil = in.s.now
	}
}

// gateOpen reports whether the instance may write now, by its worker's
// rule: MayWrite, or for a worker that ignores the fence, "holds a lease
// not known to be lost".
func (in *inst) gateOpen() bool {
	if in.down || in.lease == nil {
		return false
	}
	if in.s.cfg.WorkerIgnoresFence {
		err := in.lease.Err()
		return err == nil || errors.Is(err, lease.ErrFenced)
	}
	return in.lease.MayWrite()
}

func (in *inst) beginCall() {
	in.s.mu.Lock()
	in.call++
	in.occ = map[string]int{}
	in.s.mu.Unlock()
}

// endCall flushes the trace lines of requests the lease sent from its own
// goroutines, sorted, so that the trace does not depend on scheduling.
func (in *inst) endCall() {
	s := in.s
	s.mu.Lock()
	lines := in.gbuf
	in.gbuf = nil
	s.mu.Unlock()
	sortStrings(lines)
	for _, l := range lines {
		s.tracef("%s", l)
	}
}

// act is one step of the instance's process.
func (in *inst) act() {
	s := in.s
	if in.gone {
		return
	}
	if in.exitAt > 0 && s.now >= in.exitAt {
		s.tracef("%s, the old process, exits", in)
		in.gone, in.down = true, true
		in.lease, in.work, in.paused, in.oldLease = nil, nil, nil, nil
		return
	}
	if in.oldLease != nil && s.now >= in.releaseAt && !in.down {
		old := in.oldLease
		in.oldLease = nil
		in.busy = true
		in.beginCall()
		err := old.Release(context.Background())
		in.endCall()
		in.busy = false
		s.fault("release-old-lease")
		s.tracef("%s releases its old, fenced lease (version %s): %v", in, old.Version(), err)
	}
	if in.down {
		if s.now >= in.restartAt && (s.drill == nil || s.drill.victim != in) {
			id := in.id
			if in.newID {
				in.tags++
				id = fmt.Sprintf("%s-%d", in.name, in.inc+1)
			}
			in.start(id)
			s.tracef("%s restarts (incarnation %d)", in, in.inc)
		}
		return
	}
	if s.now <= in.suspendedUntil {
		return
	}
	if p := in.paused; p != nil {
		in.paused = nil
		in.sendPaused(p)
		if s.done {
			return
		}
	}
	if in.lease == nil {
		if s.now >= in.retryAt {
			in.acquire()
		}
		return
	}
	if errors.Is(in.lease.Err(), lease.ErrFenced) && !s.cfg.WorkerIgnoresFence {
		// Keep returns as soon as the lease is fenced; the process then
		// contends again with its Contender, which recognises its own
		// record.
		s.tracef("%s fenced (epoch %d); contends again", in, in.epoch)
		in.keepOld()
		in.lease, in.work = nil, nil
		in.acquire()
		return
	}
	if in.clk.Mono() >= in.renewAt {
		in.renew()
	}
	if in.lease != nil && s.now >= in.nextW {
		in.workStep()
	}
}

func (in *inst) acquire() {
	s := in.s
	in.busy = true
	in.beginCall()
	l, err := in.contender.Acquire(context.Background())
	in.endCall()
	in.busy = false
	if err != nil {
		in.retryAt = s.now + retryInterval(s.cfg.TTL)
		var he *lease.HeldError
		if errors.As(err, &he) {
			s.tracef("%s acquire: held by %q (%v)", in, he.Holder(), he.State)
		} else {
			s.tracef("%s acquire failed: %v", in, err)
		}
		return
	}
	s.epoch++
	in.lease, in.epoch = l, s.epoch
	in.renewAt = in.clk.Mono() + s.cfg.TTL/3
	in.work, in.nextW = nil, s.now
	s.tracef("%s holds the lease: epoch %d, version %s", in, in.epoch, l.Version())
	s.acquired(in)
}

func (in *inst) renew() {
	s := in.s
	in.busy = true
	in.beginCall()
	err := in.lease.Renew(context.Background())
	in.endCall()
	in.busy = false
	if in.leaving {
		in.leave()
		return
	}
	switch {
	case err == nil:
		in.renewAt = in.clk.Mono() + s.cfg.TTL/3
	case errors.Is(err, lease.ErrLost):
		if rec, ok := s.storedRecord(); ok && rec.InstanceID == in.id && rec.TTLSeconds != 0 && !in.hasTwin() {
			s.violate(InvLostReply, fmt.Sprintf("%s was told ErrLost, but the LEASE object still names it: %+v", in, rec), true)
		}
		s.tracef("%s lost the lease (epoch %d)", in, in.epoch)
		in.lease, in.work = nil, nil
		in.retryAt = s.now + retryInterval(s.cfg.TTL)
	case errors.Is(err, lease.ErrFenced):
		s.tracef("%s fenced (epoch %d); contends again", in, in.epoch)
		if s.cfg.WorkerIgnoresFence {
			// The broken worker keeps writing; it contends again to
			// learn whether it still holds the lease.
			in.renewAt = in.clk.Mono() + retryInterval(s.cfg.TTL)
			in.reacquireKeepingGate()
			return
		}
		in.keepOld()
		in.lease, in.work = nil, nil
		in.retryAt = s.now
	default:
		s.tracef("%s renewal failed: %v", in, err)
		in.renewAt = in.clk.Mono() + retryInterval(s.cfg.TTL)
	}
}

// releaseDuringHang is a shutdown that arrives while the instance's
// renewal hangs in the network: Release is called with a deadline that has
// already passed. It must stop all writing at once and return without
// waiting for the renewal; the instance then leaves once the renewal
// returns, releasing again with time to do it.
func (in *inst) releaseDuringHang() {
	s := in.s
	l := in.lease
	s.fault("release-during-hung-renewal")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	done := make(chan error, 1)
	go func() { done <- l.Release(ctx) }()
	select {
	case err := <-done:
		s.tracef("%s is told to shut down while its renewal hangs: Release returned %v", in, err)
	case <-time.After(releaseBound):
		// The old behaviour: Release waits for the renewal, ignoring its
		// context, and the goroutine stays blocked until it returns.
		s.violate(InvRelease, fmt.Sprintf("%s: Release with an expired context did not return within %v of real time while a renewal hung; MayWrite %v",
			in, releaseBound, l.MayWrite()), true)
	}
	if l.MayWrite() {
		s.violate(InvRelease, fmt.Sprintf("%s may still write after Release returned", in), true)
	}
	in.leaving = true
}

// leave finishes a shutdown asked for during a hung renewal: the instance
// releases again, with time to do it, and stays away for a while.
func (in *inst) leave() {
	s := in.s
	in.busy = true
	in.beginCall()
	err := in.lease.Release(context.Background())
	in.endCall()
	in.busy = false
	s.tracef("%s releases after the hung renewal returned (err=%v) and leaves", in, err)
	in.leaving = false
	in.down, in.restartAt, in.newID = true, s.now+s.randDur(s.cfg.TTL), false
	in.lease, in.work, in.paused = nil, nil, nil
}

// releaseBound is how long, in real time, a Release with an expired
// context may take before it counts as waiting for a hung renewal. It is
// generous: the call takes microseconds when it does not wait.
const releaseBound = 5 * time.Second

// keepOld keeps the fenced lease to release it later, in some runs: the
// sequence ErrFenced's doc recommends (acquire again with the same
// Contender) followed by a shutdown that releases the old *Lease too.
func (in *inst) keepOld() {
	s := in.s
	if s.dev&ReleaseOldLease != 0 && in.lease != nil && s.rng.IntN(2) == 0 {
		in.oldLease, in.releaseAt = in.lease, s.now+s.randDur(s.cfg.TTL)
	}
}

// reacquireKeepingGate is the broken worker's way back: it tries to take
// the lease again but keeps writing under the old one meanwhile.
func (in *inst) reacquireKeepingGate() {
	s := in.s
	in.busy = true
	in.beginCall()
	l, err := in.contender.Acquire(context.Background())
	in.endCall()
	in.busy = false
	if err == nil {
		s.epoch++
		in.lease, in.epoch = l, s.epoch
		in.renewAt = in.clk.Mono() + s.cfg.TTL/3
		s.tracef("%s holds the lease again: epoch %d", in, in.epoch)
		s.acquired(in)
	}
}

// goid returns the current goroutine's id.
func goid() uint64 {
	var buf [40]byte
	n := runtime.Stack(buf[:], false)
	b := buf[len("goroutine "):n]
	var id uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uint64(c-'0')
	}
	return id
}

func sortStrings(a []string) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}
