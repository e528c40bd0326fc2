package simulation

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"time"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/clock"
	"github.com/mushroomdb/bucketlease/internal/leaseseam"
	"github.com/mushroomdb/bucketlease/lease"
)

// inst is one instance: a machine with a clock, running the lease and a
// backup worker. It keeps its machine (clock) across process restarts.
type inst struct {
	s      *sim
	idx    int
	name   string
	id     string
	inc    int // process incarnation
	clk    *clock.Fake
	offset time.Duration // wall minus true time, inside the skew envelope
	// wrong: the machine's wall clock is wrong by this much beside offset,
	// from before its first process started (ClockWrongFromStart); every
	// process on the machine reads it through a clock.Offset.
	wrong    time.Duration
	wallRate float64
	monoRate float64
	monoFrac float64

	contender *lease.Contender
	lease     *lease.Lease
	oldLease  *lease.Lease  // a fenced lease it will release later (ReleaseOldLease)
	releaseAt time.Duration // true time of that release
	leaving   bool          // Release was asked during a hung renewal
	shutdown  *asyncCall    // a Release running beside a slow write (SlowWriteOutlivesRelease)

	coarse     bool          // the wall clock reads whole seconds (CoarseWallClock)
	stuckUntil time.Duration // true time until which the wall clock stands still
	// hourBackUntil: the wall clock is an hour behind until then
	// (WallClockBackAnHour); 0 when it is not.
	hourBackUntil time.Duration
	machine       *inst         // the instance whose machine (clock) this process shares
	exitAt        time.Duration // true time at which this old process exits for good
	gone          bool          // an old process that has exited for good
	epoch         int
	renewAt       time.Duration // on the instance's monotonic clock
	retryAt       time.Duration // true time of the next acquire attempt
	busy          bool

	down           bool
	restartAt      time.Duration
	newID          bool
	suspendedUntil time.Duration
	partitioned    bool
	partitionUntil time.Duration
	paused         *pendingWrite
	// dropINMUntil: the instance's path drops If-None-Match until then
	// (PathDropsIfNoneMatch), from every PUT or, if dropINMFirstOnly, from
	// the first PUT of each Acquire.
	dropINMUntil     time.Duration
	dropINMFirstOnly bool

	work  *cycle
	nextW time.Duration
	tags  int

	// request identity bookkeeping for the current lease call
	calls        int
	callKind     string
	putsInCall   int
	occ          map[string]int
	writingUnder *lease.Lease // the lease whose fenced bucket the current call writes through
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
	in.leaving, in.oldLease, in.shutdown = false, nil, nil
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
	if d := in.machineOwner().wrong; d != 0 {
		clk = clock.Offset{Clock: clk, D: d}
	}
	var seed [32]byte
	binary.LittleEndian.PutUint64(seed[:], hash(in.s.cfg.Seed, "|rand|", in.idx, "|", in.inc))
	c, err := lease.NewContender(bucket.New(in.conn(), prefix), leaseseam.With(&lease.Options{
		TTL: in.s.cfg.TTL, InstanceID: id, Logger: logger, StateDir: in.stateDir(),
		OnEvent: in.onEvent,
	}, leaseseam.Seams{Clock: clk, Getenv: func(string) string { return "" }, Rand: rand.NewChaCha8(seed)}))

	if err != nil {
		panic(err)
	}
	in.contender = c
}

// stateDir is the state directory of the instance's machine, or "" when
// the run has none (StateDirectory).
func (in *inst) stateDir() string {
	if in.s.stateRoot == "" {
		return ""
	}
	return filepath.Join(in.s.stateRoot, in.machineOwner().name)
}

// exitProcess ends the process: the kernel drops its state directory's
// lock (Contender.Close) whether it exited or was killed.
func (in *inst) exitProcess() {
	if in.contender != nil {
		in.contender.Close()
	}
}

// onEvent runs on the goroutine of a lease call, while the simulation's
// loop waits for it.
func (in *inst) onEvent(e lease.Event) {
	if e.Kind == lease.EventRenewed {
		return
	}
	detail := e.Detail
	if e.Kind == lease.EventAcquired && strings.HasPrefix(detail, "adopted the lease") {
		in.s.res.Adoptions++
	}
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

// hourBack steps the holder's wall clock back by an hour, for one to three
// TTLs (WallClockBackAnHour). Meanwhile the process is neither restarted
// nor crashed: a new process would trust a clock an hour wrong, which is
// skew far beyond what the spec absorbs.
func (in *inst) hourBack() {
	s := in.s
	d := s.cfg.TTL + s.randDur(2*s.cfg.TTL)
	in.hourBackUntil = s.now + d
	in.clk.AdvanceWall(-time.Hour)
	s.fault("wall-clock-back-an-hour")
	s.tracef("%s wall clock steps back by an hour, for %v", in, d)
}

// endHourBack steps the wall clock forward again when the episode is over
// (or now, if force).
func (in *inst) endHourBack(force bool) {
	if in.hourBackUntil == 0 || (!force && in.s.now < in.hourBackUntil) {
		return
	}
	in.hourBackUntil = 0
	in.clk.AdvanceWall(time.Hour)
	in.s.tracef("%s wall clock steps forward by an hour again", in)
}

// chaos injects instance faults at random.
func (in *inst) chaos() {
	s := in.s
	if in.gone || in.machine != nil {
		return // an exited process, or one that shares another's machine
	}
	r := s.rng.Float64()
	const p = 0.0008
	hourBack := in.hourBackUntil != 0
	switch {
	case r < 4*p:
		in.jumpWall()
	case r < 4.5*p && s.dev&StuckWallClock != 0 && s.now >= in.stuckUntil:
		in.stuckUntil = s.now + s.randDur(s.cfg.MaxSkew)
		s.fault("stuck-wall-clock")
		s.tracef("%s wall clock stands still until t=%v at the latest", in, in.stuckUntil)
	case r < 4.8*p && s.dev&RestartWhileRunning != 0 && s.extra < 2 && !in.down && !in.busy && !hourBack && !in.frozen():
		in.restartWhileRunning()
	case in.machineBusy() || in.down:
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
	case r < 6.8*p && !hourBack:
		in.crash(s.randDur(s.cfg.TTL), s.rng.IntN(2) == 0)
	case r < 7.2*p && in.lease != nil && !hourBack && !in.frozen(): // a frozen process cannot shut down
		var err error
		l := in.lease
		in.call("release", func() { err = l.Release(context.Background()) })
		in.noteReleased(l, err)
		s.fault("release-and-leave")
		s.tracef("%s releases (err=%v) and leaves", in, err)
		if s.dev&LeaseDeletedAfterRelease != 0 {
			s.deleteReleased(in)
		}
		in.exitProcess()
		in.down, in.restartAt, in.newID = true, s.now+s.randDur(s.cfg.TTL), false
		in.lease, in.work, in.paused = nil, nil, nil
	case r < 7.6*p && s.dev&PathDropsIfNoneMatch != 0 && s.now >= in.dropINMUntil:
		d := s.randDur(2 * s.cfg.TTL)
		in.dropINMUntil, in.dropINMFirstOnly = s.now+d, s.rng.IntN(2) == 0
		s.fault("path-drops-if-none-match")
		s.tracef("%s: for %v its path drops If-None-Match (from the first PUT of each Acquire only: %v)", in, d, in.dropINMFirstOnly)
	case r < 8.4*p && s.dev&WallClockBackAnHour != 0 && !hourBack && in.lease != nil && in.lease.MayWrite():
		in.hourBack()
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
	if s.cfg.siblingContendsLate {
		nw.retryAt = s.now + s.cfg.TTL
	}
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
	in.exitProcess()
	in.down, in.restartAt, in.newID = true, s.now+d, newID
	in.lease, in.work, in.paused = nil, nil, nil
	in.suspendedUntil = 0
}

// heal ends the instance's partition and its machine's suspension (for a
// drill).
func (in *inst) heal() {
	in.partitioned = false
	if h := in.host(); h.suspendedUntil > in.s.now {
		h.suspendedUntil = in.s.now
	}
}

// host is the instance whose freeze this process obeys: the owner of its
// machine (unless the run restores the old world, siblingsRunWhileFrozen).
func (in *inst) host() *inst {
	if in.s.cfg.siblingsRunWhileFrozen {
		return in
	}
	return in.machineOwner()
}

// machineOwner is the instance that owns the machine this process runs on:
// its clocks, and whether it is frozen.
func (in *inst) machineOwner() *inst {
	if in.machine != nil {
		return in.machine
	}
	return in
}

// frozen reports whether the process's machine is suspended now: every
// process on it stands still, and its monotonic clock with them.
func (in *inst) frozen() bool { return in.s.now <= in.host().suspendedUntil }

// machineBusy reports whether a process on in's machine is inside a lease
// call. A machine is frozen only between calls: the simulation cannot stop
// a call's goroutine half-way, so a freeze that began during one would let
// the call go on sending requests from a frozen machine.
//
// Both loops are needed: a call another instance's call polled as returned
// (pollAsync) has left s.async while its process is still inside inst.call
// (busy), and a shutdown's Release runs in s.async with no process busy.
func (in *inst) machineBusy() bool {
	h := in.host()
	for _, o := range in.s.insts {
		if o.busy && !o.gone && o.host() == h {
			return true
		}
	}
	for _, a := range in.s.async {
		if a.in != nil && !a.finished && a.in.host() == h {
			return true // a call running beside the process's own (a shutdown's Release)
		}
	}
	return false
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

// noteClockError counts an Acquire (renewal false) or a renewal that
// failed with lease.ErrClock.
func (in *inst) noteClockError(err error, renewal bool) {
	if !errors.Is(err, lease.ErrClock) {
		return
	}
	s := in.s
	switch {
	case renewal:
		s.res.ClockFenced++
	case in.machineOwner().wrong != 0:
		s.res.ClockRefused++
		s.res.WrongClockRefused++
	default:
		s.res.ClockRefused++
	}
}

// noteReleased records when a Release of l returned nil: nothing written
// through l's fenced bucket may land after that.
func (in *inst) noteReleased(l *lease.Lease, err error) {
	if err == nil && l != nil {
		if _, ok := in.s.releasedAt[l]; !ok {
			in.s.releasedAt[l] = in.s.now
		}
	}
}

// act is one step of the instance's process.
func (in *inst) act() {
	s := in.s
	if in.gone {
		return
	}
	if in.frozen() {
		return // a frozen machine does nothing: no process on it exits, restarts or writes
	}
	if in.exitAt > 0 && s.now >= in.exitAt {
		s.tracef("%s, the old process, exits", in)
		in.exitProcess()
		in.gone, in.down = true, true
		in.lease, in.work, in.paused, in.oldLease = nil, nil, nil, nil
		return
	}
	if in.oldLease != nil && s.now >= in.releaseAt && !in.down {
		old := in.oldLease
		in.oldLease = nil
		var err error
		in.call("release", func() { err = old.Release(context.Background()) })
		in.noteReleased(old, err)
		s.fault("release-old-lease")
		s.tracef("%s releases its old, fenced lease (version %s): %v", in, leaseseam.Inside(old).Version, err)
	}
	if in.down {
		if s.now >= in.restartAt && (s.drill == nil || s.drill.victim != in) && in.hourBackUntil == 0 {
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
	var (
		l   *lease.Lease
		err error
	)
	in.call("acquire", func() { l, err = in.contender.Acquire(context.Background()) })
	if err != nil {
		in.retryAt = s.now + retryInterval(s.cfg.TTL)
		in.noteClockError(err, false)
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
	s.tracef("%s holds the lease: epoch %d, version %s", in, in.epoch, leaseseam.Inside(l).Version)
	s.acquired(in)
}

func (in *inst) renew() {
	s := in.s
	var err error
	l := in.lease
	in.call("renew", func() { err = leaseseam.Renew(context.Background(), l) })
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
		in.noteClockError(err, true)
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
// renewal hangs in the network: Release is called, on a goroutine of its
// own, with a deadline that has already passed. It must stop all writing
// and return at once, before the network serves anything more; the
// instance then leaves once the renewal returns, releasing again with time
// to do it.
func (in *inst) releaseDuringHang() {
	s := in.s
	l := in.lease
	s.fault("release-during-hung-renewal")
	in.leaving = true
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	a := s.start(in, "Release with an expired context during a hung renewal", func() error { return l.Release(ctx) })
	a.atOnce = true
	a.onDone = func(a *asyncCall) {
		s.tracef("%s is told to shut down while its renewal hangs: Release returned %v", in, a.err)
		if l.MayWrite() {
			s.violate(InvRelease, fmt.Sprintf("%s may still write after Release returned", in), true)
		}
	}
}

// slowWriteAndShutdown makes r, a write through in's fenced bucket, slow
// (it ignores cancellation and lands d later, before the lease's fence
// deadline, so before anyone could take the lease over a fenced holder),
// and starts a shutdown beside it: Release on a goroutine of its own.
// Nothing r does may land after that Release returned nil.
func (in *inst) slowWriteAndShutdown(r *request) {
	s := in.s
	l := r.under
	if l != in.lease || !l.MayWrite() {
		return
	}
	left := l.Deadline().Sub(in.clk.Wall())
	d := min(left/2-s.cfg.Tick, 8*time.Second).Truncate(s.cfg.Tick)
	if d < 2*s.cfg.Tick {
		return
	}
	r.slow.Store(true)
	r.applyAt, r.replyAt = s.now+d, s.now+d
	s.fault("slow-write-outlives-release")
	s.tracef("%s: its %s of %s is slow (lands in %v, whatever its context says), and a shutdown arrives: Release", in, r.op, r.key, d)
	a := s.start(in, "Release during a slow write", func() error { return l.Release(context.Background()) })
	in.shutdown = a
	a.onDone = func(a *asyncCall) {
		s.tracef("%s: the shutdown's Release returned %v", in, a.err)
		in.noteReleased(l, a.err)
	}
}

// finishShutdown waits for a shutdown started beside a slow write, and
// takes the process down.
func (in *inst) finishShutdown() {
	s := in.s
	a := in.shutdown
	in.busy = true // the process is inside Release: its machine does not freeze, nor does it act, meanwhile
	ok := s.drive(a.done, s.cfg.hangLimit())
	in.busy = false
	if !ok {
		s.violate(InvHang, fmt.Sprintf("%s: %s did not return within %v", in, a.what, s.cfg.hangLimit()), true)
	}
	s.pollAsync()
	in.shutdown = nil
	in.exitProcess()
	in.down, in.restartAt, in.newID = true, s.now+s.randDur(s.cfg.TTL), false
	in.lease, in.work, in.paused = nil, nil, nil
}

// leave finishes a shutdown asked for during a hung renewal: the instance
// releases again, with time to do it, and stays away for a while.
func (in *inst) leave() {
	s := in.s
	var err error
	l := in.lease
	in.call("release", func() { err = l.Release(context.Background()) })
	in.noteReleased(l, err)
	s.tracef("%s releases after the hung renewal returned (err=%v) and leaves", in, err)
	in.leaving = false
	in.exitProcess()
	in.down, in.restartAt, in.newID = true, s.now+s.randDur(s.cfg.TTL), false
	in.lease, in.work, in.paused = nil, nil, nil
}

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
	var (
		l   *lease.Lease
		err error
	)
	in.call("acquire", func() { l, err = in.contender.Acquire(context.Background()) })
	if err == nil {
		s.epoch++
		in.lease, in.epoch = l, s.epoch
		in.renewAt = in.clk.Mono() + s.cfg.TTL/3
		s.tracef("%s holds the lease again: epoch %d", in, in.epoch)
		s.acquired(in)
	}
}
