//go:build linux

package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/internal/objects"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// The negative controls: each must make the checker report a violation.
const (
	// ControlSkewBeyond: worker 0's clock runs 0.9 TTL ahead, beyond the
	// TTL/3 the lease absorbs; it takes over healthy holders.
	ControlSkewBeyond = "skew-beyond"
	// ControlFenceDisabled: the workers write through the raw bucket and
	// ignore MayWrite; the holder of p0 is paused for 3 TTL again and
	// again. Its writes still carry its lease's stamp, so that those it
	// sends on waking, after it was taken over, are late writes the
	// readers' check must find.
	ControlFenceDisabled = "fence-disabled"
	// ControlFencedRelease is not a negative control but a scenario for
	// the present lease, where no invariant may break: the holder of p0 is
	// paused for 1.5 TTL, then woken and terminated, so that it releases a
	// lease it no longer holds. (Mutant chaos-release-deletes brings back
	// the release that deleted its successor's lease.)
	ControlFencedRelease = "fenced-release"
	// ControlTwins is a scenario too: a second process with the id of the
	// holder of p0 is started every three TTLs. (Mutant
	// chaos-adopt-by-id brings back the adoption of any record naming our
	// id.)
	ControlTwins = "twins"
	// ControlProbeEnabled is a scenario too: the s3 driver through a
	// proxy that strips preconditions (internal/testsupport/stripproxy),
	// where no acquire may succeed. (Mutant chaos-probe-skipped brings
	// back the acquire without the probe.)
	ControlProbeEnabled = "probe-enabled"
	// ControlLieRefusal: every worker's driver reports the first refused
	// If-None-Match PUT of each LEASE object (the acquire probe's) as a
	// success; the lease fails closed, so only the linearizability check
	// of the LEASE history can see it.
	ControlLieRefusal = "lie-refusal"
	// ControlStreamUnfenced: every backup's first chunk is streamed past
	// the fence (the raw bucket, a context the fence does not cancel), its
	// body held back until the lease may no longer write; the holder of
	// p0 is paused for 1.5 TTL again and again. The upload then commits
	// after a successor's epoch began, which only late-commit can see
	// (every other write stays fenced).
	ControlStreamUnfenced = "stream-unfenced"
)

// Controls are the negative controls, in the order the tests run them.
var Controls = []string{ControlSkewBeyond, ControlFenceDisabled, ControlLieRefusal, ControlStreamUnfenced}

// Scenarios are the runs of the present lease under one fault that an old
// defect of the lease failed (each brought back by a mutant in
// lab/mutate/mutants.txt), in the order the tests run them.
var Scenarios = []string{ControlFencedRelease, ControlTwins, ControlProbeEnabled}

// Config describes one chaos run on one driver.
type Config struct {
	Driver   string        // one of Drivers, or "s3-stripped"
	Seed     uint64        // the schedule's seed
	Duration time.Duration // how long the nemesis runs
	Workers  int           // worker processes, at least 5 (default 5)
	Leases   int           // prefixes they contend for, at least 2 (default 2)
	TTL      time.Duration // the lease TTL, whole seconds (default 2s)
	// Control is one of the Control* constants (a negative control or a
	// scenario), or "" for a normal run.
	Control string
	// Dir holds the run's logs; it must exist.
	Dir string
	// WorkerBin is the chaosworker binary (BuildWorker).
	WorkerBin string
	// CLIBin, if set, is the bucketlease binary (BuildCLI): the last
	// worker slot then runs "bucketlease hold --wait -- chaosworker
	// -child" on p0 instead of a worker, under the same nemesis.
	CLIBin string
	// Getenv reads the emulator variables; default os.Getenv.
	Getenv func(string) string
	// Progress, if set, gets a line per nemesis action.
	Progress io.Writer
	// SaneClocks turns off, in a normal run, the workers whose wall clock
	// is wrong from the start (ClockOffsets).
	SaneClocks bool
}

func (c *Config) defaults() error {
	if c.Workers == 0 {
		c.Workers = 5
	}
	if c.Leases == 0 {
		c.Leases = 2
	}
	if c.TTL == 0 {
		c.TTL = 2 * time.Second
	}
	if c.Getenv == nil {
		c.Getenv = osGetenv
	}
	switch {
	case c.Workers < 2 || c.Leases < 1:
		return errors.New("chaos: at least 2 workers and 1 lease")
	case c.TTL < time.Second || c.TTL%time.Second != 0:
		return errors.New("chaos: the TTL must be whole seconds")
	case c.Dir == "" || c.WorkerBin == "":
		return errors.New("chaos: Dir and WorkerBin are required")
	case c.Duration <= 0 || c.Duration > 24*time.Hour:
		return errors.New("chaos: Duration must be between 0 and 24h")
	}
	if c.Control == ControlProbeEnabled && c.Driver != "s3-stripped" {
		return fmt.Errorf("chaos: control %s runs on s3-stripped only", c.Control)
	}
	return nil
}

// Drill is one takeover drill: the holder of a lease killed in calm
// conditions, and whether and when another process took the lease.
type Drill struct {
	Label   string
	Kill    time.Time // when every victim was known dead
	Victims []string  // the instance ids killed
	Procs   []string  // their processes
	Moved   time.Time // when the harness saw another holder; zero if never
	MovedTo string    // the instance ID the LEASE object named then
	Skipped string    // why no drill ran (no live holder)
}

// Executed is a nemesis action as it was carried out.
type Executed struct {
	At     time.Time
	Action Action
	Note   string // which process, or why it was skipped
}

// Result is a finished run: what was done, what the bucket held, and the
// checker's verdict.
type Result struct {
	Config    Config
	Start     time.Time
	End       time.Time
	Schedule  []Action
	Executed  []Executed
	Drills    []Drill
	Processes int
	Skews     []time.Duration
	// ClockOffsets are the slots' wall clocks wrong from the start
	// (WorkerConfig.ClockOffset), by slot; zero for a sane clock.
	ClockOffsets []time.Duration
	Entries      []Entry
	Objects      []Object
	// Races are the race detector's reports found in the processes'
	// output (binaries built with -race), one per process.
	Races []string
	// Pending are the uploads left staged once every worker had stopped
	// (PendingUpload); NoPending says why they were not listed, on a
	// driver where the harness cannot. The harness aborts each after the
	// check: Cleaned counts those aborted, Left those still listed after.
	Pending   []PendingUpload
	NoPending string
	Cleaned   int
	Left      int
	CleanErr  string
	// Stamps says whether the driver keeps object metadata
	// (driver.Capabilities.Metadata), so that every object written under
	// a lease carries its stamp. Leases are the LEASE objects read after
	// the run, by label: the eras their records tell of, and the
	// resolution of the service's clock their answers gave.
	Stamps bool
	Leases map[string]admin.Status
	Check  *Check
}

type event struct {
	at time.Duration
	f  func()
}

type runner struct {
	cfg    Config
	be     *backend
	start  time.Time
	slots  []*slot
	dupPx  *Proxy
	dups   []*proc
	ndup   int
	procs  int
	logs   []string
	outs   []string
	queue  []event
	res    *Result
	rng    *rand.Rand
	allPx  []*Proxy
	closed bool
}

// Run carries out one chaos run and checks it. The error is for a run that
// could not be carried out (no server, no bucket); violations are in
// Result.Check.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	be, err := newBackend(ctx, cfg.Driver, cfg.Leases, cfg.Dir, cfg.Getenv)
	if err != nil {
		return nil, err
	}
	defer be.close()
	r := &runner{cfg: cfg, be: be, rng: rand.New(rand.NewPCG(cfg.Seed, 0x1d5))}
	r.res = &Result{Config: cfg, Schedule: Schedule(cfg.Seed, cfg.Duration, cfg.TTL, cfg.Workers, cfg.Leases, cfg.Control),
		Skews: Skews(cfg.Seed, cfg.TTL, cfg.Workers, cfg.Control), ClockOffsets: ClockOffsets(cfg)}
	defer r.shutdown()
	if be.upstream != "" {
		for range cfg.Workers + 1 {
			px, err := StartProxy(be.upstream)
			if err != nil {
				return nil, err
			}
			r.allPx = append(r.allPx, px)
		}
		r.dupPx = r.allPx[cfg.Workers]
	}
	if err := os.WriteFile(filepath.Join(cfg.Dir, "schedule.txt"), []byte(FormatSchedule(r.res.Schedule)), 0o644); err != nil {
		return nil, err
	}
	r.start = time.Now()
	r.res.Start = r.start
	for i := range cfg.Workers {
		s := &slot{i: i, skew: r.res.Skews[i], offset: r.res.ClockOffsets[i], cli: cfg.CLIBin != "" && i == cfg.Workers-1}
		if s.cli {
			s.skew, r.res.Skews[i] = 0, 0 // hold has no test clock
		}
		if r.allPx != nil {
			s.proxy = r.allPx[i]
		}
		s.gen++
		s.id = fmt.Sprintf("w%d-g%d-%x", i, s.gen, cfg.Seed&0xffff)
		r.slots = append(r.slots, s)
		if err := r.startSlot(s); err != nil {
			return nil, err
		}
	}
	for _, a := range r.res.Schedule {
		r.push(a.At, func() { r.apply(a) })
	}
	for at := cfg.TTL; at < cfg.Duration; at += cfg.TTL {
		r.push(at, r.supervise)
	}
	r.push(cfg.Duration, func() {})
	r.loop(ctx)
	r.healAll()
	r.stopAll()
	r.res.End = time.Now()
	r.res.Processes = r.procs
	for _, o := range r.outs {
		if data, err := os.ReadFile(o); err == nil {
			if i := strings.Index(string(data), "WARNING: DATA RACE"); i >= 0 {
				r.res.Races = append(r.res.Races, filepath.Base(o)+":\n"+string(data[i:min(len(data), i+6000)]))
			}
		}
	}
	entries, err := ReadLogs(r.logs)
	if err != nil {
		return nil, err
	}
	r.res.Entries = entries
	// An interrupted run is still listed and checked.
	objs, err := r.listAll(context.WithoutCancel(ctx))
	if err != nil {
		return nil, fmt.Errorf("listing the bucket: %w", err)
	}
	r.res.Objects = objs
	if err := r.inspectLeases(context.WithoutCancel(ctx)); err != nil {
		return nil, err
	}
	if err := r.listPending(context.WithoutCancel(ctx)); err != nil {
		return nil, fmt.Errorf("listing the pending uploads: %w", err)
	}
	r.res.Check = CheckRun(r.res)
	r.cleanPending(context.WithoutCancel(ctx))
	return r.res, nil
}

// listPending lists the uploads left staged, where the backend can.
func (r *runner) listPending(ctx context.Context) error {
	if r.be.pending == nil {
		r.res.NoPending = r.be.noPending
		return nil
	}
	lctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	ps, err := r.be.pending(lctx)
	r.res.Pending = ps
	return err
}

// cleanPending aborts every upload left staged, as an operator's clean-up
// (or S3's AbortIncompleteMultipartUpload rule) would, and lists again.
func (r *runner) cleanPending(ctx context.Context) {
	if r.be.pending == nil || len(r.res.Pending) == 0 {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var errs []string
	for _, p := range r.res.Pending {
		if err := r.be.abort(cctx, p); err != nil {
			errs = append(errs, fmt.Sprintf("%s (%s): %v", p.Key, p.Upload, err))
			continue
		}
		r.res.Cleaned++
	}
	left, err := r.be.pending(cctx)
	if err != nil {
		errs = append(errs, "listing again: "+err.Error())
	}
	r.res.Left = len(left)
	r.res.CleanErr = strings.Join(errs, "; ")
}

func (r *runner) now() time.Duration { return time.Since(r.start) }

func (r *runner) push(at time.Duration, f func()) {
	r.queue = append(r.queue, event{at, f})
	sort.SliceStable(r.queue, func(i, j int) bool { return r.queue[i].at < r.queue[j].at })
}

// loop runs the queued events in time order until the run's duration has
// passed; follow-ups due later are left to healAll.
func (r *runner) loop(ctx context.Context) {
	for steps := 0; len(r.queue) > 0 && steps < 100000; steps++ {
		e := r.queue[0]
		if e.at > r.cfg.Duration {
			return
		}
		r.queue = r.queue[1:]
		if d := e.at - r.now(); d > 0 {
			sleepCtx(ctx, d)
		}
		if ctx.Err() != nil {
			return
		}
		e.f()
	}
}

func (r *runner) note(a Action, format string, args ...any) {
	ex := Executed{At: time.Now(), Action: a, Note: fmt.Sprintf(format, args...)}
	r.res.Executed = append(r.res.Executed, ex)
	if r.cfg.Progress != nil {
		fmt.Fprintf(r.cfg.Progress, "chaos %s: +%v %s %s\n", r.cfg.Driver, r.now().Round(time.Millisecond), a.Kind, ex.Note)
	}
}

// followUp runs f at offset at, unless the slot has been acted on since.
func (r *runner) followUp(s *slot, at time.Duration, f func()) {
	tok := s.token
	r.push(at, func() {
		if s.token == tok {
			f()
		}
	})
}

func (r *runner) apply(a Action) {
	switch a.Kind {
	case ActDrill:
		r.healAll()
		r.drill(a)
		return
	case ActPauseHold:
		r.pauseHolder(a)
		return
	}
	var s *slot
	if a.Holder {
		rec, ok := r.readLease(a.Slot)
		hs := r.holders(rec.InstanceID)
		if !ok || rec.TTLSeconds == 0 || len(hs) == 0 {
			r.note(a, "skipped: no live holder of %s", Label(a.Slot))
			return
		}
		s = hs[0]
	} else {
		s = r.slots[a.Slot]
	}
	if s.busy || s.down || s.cur == nil {
		r.note(a, "skipped: w%d is already under a fault", s.i)
		return
	}
	needProxy := a.Kind == ActPartition || a.Kind == ActDelay || a.Kind == ActDropReply || a.Kind == ActReset
	if needProxy && s.proxy == nil {
		r.note(a, "skipped: the %s driver has no network", r.cfg.Driver)
		return
	}
	s.token++
	now := r.now()
	p := s.cur
	switch a.Kind {
	case ActPause:
		p.signal(syscall.SIGSTOP)
		s.busy, s.paused = true, true
		r.followUp(s, now+a.Dur, func() { p.signal(syscall.SIGCONT); s.busy, s.paused = false, false })
	case ActPauseTerm:
		p.signal(syscall.SIGSTOP)
		s.busy, s.paused = true, true
		r.followUp(s, now+a.Dur, func() {
			p.signal(syscall.SIGCONT)
			p.signal(syscall.SIGTERM)
			s.paused, s.down = false, true
			r.followUp(s, r.now()+a.Dur2, func() { r.restart(s, false); s.busy = false })
		})
	case ActKillSame, ActKillNew:
		p.signal(syscall.SIGKILL)
		s.busy, s.down = true, true
		r.followUp(s, now+a.Dur, func() { r.restart(s, a.Kind == ActKillNew); s.busy = false })
	case ActTerm:
		p.signal(syscall.SIGTERM)
		s.busy, s.down = true, true
		r.followUp(s, now+a.Dur, func() { r.restart(s, false); s.busy = false })
	case ActPartition:
		s.proxy.Partition(true)
		s.busy = true
		r.followUp(s, now+a.Dur, func() { s.proxy.Partition(false); s.busy = false })
	case ActDelay:
		s.proxy.SetDelay(a.Delay)
		s.busy = true
		r.followUp(s, now+a.Dur, func() { s.proxy.SetDelay(0); s.busy = false })
	case ActDropReply:
		s.proxy.DropReplies(true)
		s.busy = true
		r.followUp(s, now+a.Dur, func() { s.proxy.DropReplies(false); s.busy = false })
	case ActReset:
		s.proxy.Reset()
	case ActDuplicate:
		r.ndup++
		d, err := r.spawn(fmt.Sprintf("d%d.%d", s.i, r.ndup), s.id, r.dupPx, s.skew, s.offset)
		if err != nil {
			r.note(a, "failed: %v", err)
			return
		}
		r.dups = append(r.dups, d)
		r.push(now+a.Dur, func() { d.signal(syscall.SIGTERM) })
		r.note(a, "%s runs with the id of %s (%s)", d.name, p.name, s.id)
		return
	}
	r.note(a, "%s (%s)", p.name, p.id)
}

// healAll ends every fault: proxies healed, paused processes continued,
// stopped ones restarted, duplicates stopped.
func (r *runner) healAll() {
	for _, s := range r.slots {
		s.token++
		if s.proxy != nil {
			s.proxy.Heal()
		}
		if s.paused && s.cur != nil {
			s.cur.signal(syscall.SIGCONT)
		}
		s.paused = false
		if (s.down || s.cur == nil || !s.cur.alive()) && !r.closed {
			r.restart(s, false)
		}
		s.busy = false
	}
	for _, d := range r.dups {
		d.signal(syscall.SIGCONT)
		d.signal(syscall.SIGTERM)
	}
	for _, d := range r.dups {
		d.wait(3*r.cfg.TTL + 5*time.Second)
	}
	r.dups = nil
}

// readLease reads the LEASE object of label i straight from the server.
func (r *runner) readLease(i int) (admin.Record, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*r.cfg.TTL+5*time.Second)
	defer cancel()
	data, _, err := objects.ReadAll(ctx, r.be.directs[i], JoinKey(r.be.prefixes[i], "LEASE"), admin.MaxRecordSize, driver.GetOptions{})
	if err != nil {
		return admin.Record{}, false
	}
	rec, err := admin.DecodeRecord(data)
	return rec, err == nil
}

// holders returns the slots running a process with the given id.
func (r *runner) holders(id string) []*slot {
	var out []*slot
	for _, s := range r.slots {
		if s.id == id && s.cur != nil && !s.down {
			out = append(out, s)
		}
	}
	return out
}

func (r *runner) drill(a Action) {
	d := Drill{Label: Label(0)}
	rec, ok := r.readLease(0)
	victims := r.holders(rec.InstanceID)
	if !ok || rec.TTLSeconds == 0 || len(victims) == 0 {
		d.Skipped = "no live holder named by the LEASE object"
		r.res.Drills = append(r.res.Drills, d)
		r.note(a, "skipped: %s", d.Skipped)
		return
	}
	for _, s := range victims {
		s.token++
		s.cur.signal(syscall.SIGKILL)
	}
	for _, s := range victims {
		s.cur.wait(10 * time.Second)
		s.down = true
		d.Victims = append(d.Victims, s.id)
		d.Procs = append(d.Procs, s.cur.name)
	}
	d.Kill = time.Now()
	deadline := d.Kill.Add(4*r.cfg.TTL + 10*time.Second)
	for range maxDrillPolls {
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(r.cfg.TTL / 10)
		if cur, ok := r.readLease(0); ok && cur.TTLSeconds != 0 && cur.InstanceID != rec.InstanceID {
			d.Moved, d.MovedTo = time.Now(), cur.InstanceID
			break
		}
	}
	r.res.Drills = append(r.res.Drills, d)
	took := "no takeover"
	if !d.Moved.IsZero() {
		took = fmt.Sprintf("lease moved after %v", d.Moved.Sub(d.Kill).Round(time.Millisecond))
	}
	r.note(a, "killed %s (%s); %s", strings.Join(d.Procs, ","), rec.InstanceID, took)
	newID := r.rng.IntN(2) == 0
	for _, s := range victims {
		r.restart(s, newID)
	}
}

// pauseHolder pauses the holder of p0 for a.Dur, then continues it, and
// with a.Term terminates it and restarts it a TTL later (the controls).
func (r *runner) pauseHolder(a Action) {
	rec, ok := r.readLease(0)
	hs := r.holders(rec.InstanceID)
	if !ok || rec.TTLSeconds == 0 || len(hs) == 0 {
		r.note(a, "skipped: no live holder of p0")
		return
	}
	s := hs[0]
	if s.busy {
		r.note(a, "skipped: w%d is busy", s.i)
		return
	}
	s.token++
	p := s.cur
	p.signal(syscall.SIGSTOP)
	s.busy, s.paused = true, true
	r.note(a, "%s (%s)", p.name, p.id)
	r.followUp(s, r.now()+a.Dur, func() {
		p.signal(syscall.SIGCONT)
		s.paused = false
		if !a.Term {
			s.busy = false
			return
		}
		p.signal(syscall.SIGTERM)
		s.down = true
		r.followUp(s, r.now()+r.cfg.TTL, func() { r.restart(s, false); s.busy = false })
	})
}

// Object is one object of the bucket after the run, read straight from
// the server: its lease label, key, version, server-side modification time
// and body.
type Object struct {
	Label    string
	Key      string // the driver key
	Name     string // the key under the lease's prefix: "LATEST", "chunks/...", "LEASE"
	Version  string
	Modified time.Time
	Body     []byte // its first 64 KiB
	Size     int64  // its length, from the driver's List; -1 if unknown
	// Listed is its modification time as the driver's List gives it
	// (driver.Object.ModTime; zero if unknown), which a reader's late
	// check judges by; Metadata is what the driver returned with it (its
	// stamp, admin.StampOf).
	Listed   time.Time
	Metadata driver.Metadata
}

// inspectLeases reads each label's LEASE object after the run, for the
// eras its record tells of (admin.Status.Eras) and the service clock's
// resolution, and notes whether the driver keeps the stamps.
func (r *runner) inspectLeases(ctx context.Context) error {
	r.res.Leases = map[string]admin.Status{}
	for i, b := range r.be.directs {
		r.res.Stamps = b.Capabilities().Metadata
		lctx, cancel := context.WithTimeout(ctx, time.Minute)
		st, err := admin.Inspect(lctx, bucket.New(b, r.be.prefixes[i]), time.Now())
		cancel()
		if err != nil {
			return fmt.Errorf("reading the LEASE object of %s: %w", Label(i), err)
		}
		r.res.Leases[Label(i)] = st
	}
	return nil
}

func (r *runner) listAll(ctx context.Context) ([]Object, error) {
	var out []Object
	for i := range r.cfg.Leases {
		lctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		keys, err := r.be.list(lctx, i)
		if err != nil {
			cancel()
			return nil, err
		}
		// The sizes, from the driver's own List: a streamed chunk must
		// be whole.
		listed := map[string]driver.Object{}
		lp := ""
		if p := r.be.prefixes[i]; p != "" {
			lp = p + "/"
		}
		for o, err := range r.be.directs[i].List(lctx, lp) {
			if err != nil {
				listed = nil
				break
			}
			listed[o.Key] = o
		}
		for _, k := range keys {
			data, a, err := readHead(lctx, r.be.directs[i], k.key, driver.GetOptions{Metadata: true})
			if errors.Is(err, driver.ErrNotExist) {
				continue
			}
			if err != nil {
				cancel()
				return nil, err
			}
			name := k.key
			if p := r.be.prefixes[i]; p != "" {
				name = strings.TrimPrefix(k.key, p+"/")
			}
			lo, ok := listed[k.key]
			if !ok {
				lo.Size = -1
			}
			md := a.Metadata
			if lo.Metadata != nil {
				md = lo.Metadata
			}
			out = append(out, Object{Label: Label(i), Key: k.key, Name: name, Version: normVersion(string(a.Version)),
				Modified: k.modified, Body: data, Size: lo.Size, Listed: lo.ModTime, Metadata: md})
		}
		cancel()
	}
	return out, nil
}

// normVersion makes an ETag comparable whichever driver reported it.
// readHead reads the first 64 KiB of an object under opts: all of a small
// one, the header line of a big streamed chunk.
func readHead(ctx context.Context, b driver.Bucket, key string, opts driver.GetOptions) ([]byte, driver.Attrs, error) {
	rc, a, err := b.Get(ctx, key, opts)
	if err != nil {
		return nil, a, err
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, 64<<10))
	return data, a, err
}

func normVersion(v string) string { return strings.Trim(v, `"`) }
