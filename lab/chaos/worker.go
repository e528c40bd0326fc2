//go:build linux

package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/clock"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/drivertest/faulty"
	"github.com/mushroomdb/bucketlease/internal/leaseseam"
	"github.com/mushroomdb/bucketlease/internal/location"
	"github.com/mushroomdb/bucketlease/internal/objects"
	"github.com/mushroomdb/bucketlease/lease"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// WorkerConfig configures one worker process (cmd/chaosworker).
type WorkerConfig struct {
	Proc string        // the process's name in the logs, "w3.2": slot 3, incarnation 2
	ID   string        // the lease instance id
	URLs []string      // one driver URL per prefix the worker contends for
	TTL  time.Duration // the lease TTL
	// Skew moves the wall clock the lease reads (SkewClock); the logs use
	// the system clock.
	Skew time.Duration
	// ClockOffset makes the wall clock the lease reads wrong by this much
	// from before the worker started, beside Skew (a clock.Offset over the
	// SkewClock): a machine whose clock is an hour off, say, far outside
	// the envelope the spec allows, which only the service's clock can
	// reveal. The lease must refuse it (Acquire fails with lease.ErrClock);
	// the checker's clock invariant requires that it never holds a lease.
	ClockOffset time.Duration
	// NoServiceTime runs the lease on a driver that reports no service
	// time (faulty.NoServiceTime): it judges records on the machines'
	// clocks alone, so the skew-beyond control's clock, 0.9 TTL ahead,
	// is not refused and can show the checker catching two holders.
	NoServiceTime bool
	// NoFence is a negative control: the worker writes through the raw
	// bucket, ignoring MayWrite, until it learns that the lease is lost.
	NoFence bool
	// LieRefusal is a negative control for the linearizability check:
	// the driver under the lease reports the first refused
	// If-None-Match PUT of each LEASE object as a success.
	LieRefusal bool
	// StreamUnfenced is a negative control for the late-commit check:
	// every backup's first chunk is streamed through the raw bucket, with
	// a context the fence does not cancel, and its body stalls until the
	// lease may no longer write: the fence does not cover the upload.
	StreamUnfenced bool
	// CalmStreams makes streaming as it was before the streamed uploads
	// were paced: every eighth backup, at full speed. The harness sets it
	// for the negative controls other than stream-unfenced, whose faults
	// are caught by writes started at the wrong moment, and which a holder
	// busy in a long upload starts fewer of.
	CalmStreams bool
	Log         *Logger
	// Deadline, if set, ends the worker as SIGTERM would, so that a
	// worker whose harness died does not run on.
	Deadline time.Time
}

// Switches describes the worker's test switches, for its start line.
func (c WorkerConfig) Switches() string {
	var s []string
	if c.Skew != 0 {
		s = append(s, "skew="+c.Skew.String())
	}
	if c.ClockOffset != 0 {
		s = append(s, ClockOffsetSwitch+c.ClockOffset.String())
	}
	for _, f := range []struct {
		on   bool
		name string
	}{{c.NoServiceTime, "no-service-time"}, {c.NoFence, "no-fence"}, {c.LieRefusal, "lie-refusal"}, {c.StreamUnfenced, "stream-unfenced"}, {c.CalmStreams, "calm-streams"}} {
		if f.on {
			s = append(s, f.name)
		}
	}
	return strings.Join(s, " ")
}

// ClockOffsetSwitch starts the switch of a worker's start line that gives
// its ClockOffset: "clock-offset=1h0m0s".
const ClockOffsetSwitch = "clock-offset="

// clock is the clock the worker's lease reads: the system's, its wall
// moved by Skew and by ClockOffset.
func (c WorkerConfig) clock() clock.Clock {
	var clk clock.Clock = SkewClock{Offset: c.Skew}
	if c.ClockOffset != 0 {
		clk = clock.Offset{Clock: clk, D: c.ClockOffset}
	}
	return clk
}

// RunWorker runs the worker until ctx is done (SIGTERM), then releases
// every lease it holds or last held, and returns. It contends for the
// lease on each URL's prefix, as the README tells users to: one Contender
// per prefix with a stable instance id, Keep, Fence and Lease.Bucket. While
// it holds a lease it writes backups as the spec's worker does: immutable
// chunks and a manifest with If-None-Match: *, the manifest sealed with
// If-Match on the version it wrote, and LATEST with If-Match on the version
// it read (If-None-Match: * when there was none).
func RunWorker(ctx context.Context, cfg WorkerConfig) error {
	cfg.Log.Log(Entry{Ev: EvStart, Detail: cfg.Switches()})
	if !cfg.Deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, cfg.Deadline)
		defer cancel()
	}
	var wg sync.WaitGroup
	errs := make([]error, len(cfg.URLs))
	for i, u := range cfg.URLs {
		// Opened without ctx: a client must outlive the signal, for
		// the release.
		b, prefix, err := location.Open(context.Background(), u)
		if err != nil {
			cfg.Log.Log(Entry{Ev: EvExit, Err: "open: " + err.Error()})
			return fmt.Errorf("open URL %d: %w", i, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = (&prefixWorker{cfg: cfg, b: b, prefix: prefix, label: Label(i),
				rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(i)))}).run(ctx)
		}()
	}
	wg.Wait()
	cfg.Log.Log(Entry{Ev: EvExit})
	return errors.Join(errs...)
}

type prefixWorker struct {
	cfg    WorkerConfig
	b      driver.Bucket
	prefix string     // the driver's prefix, maybe ""
	label  string     // "p0", "p1", ...: the URL's place in WorkerConfig.URLs
	rng    *rand.Rand // only the run goroutine uses it
	// lb is the bucket under the lease: the driver's, wrapped in the
	// recorder that logs the LEASE history and the requests of streamed
	// writes. The fence-disabled control writes through it unfenced.
	lb driver.Bucket
	// cur and holdCtx are the lease being held and the context that ends
	// only at SIGTERM, for the stream-unfenced control (run goroutine only).
	cur     *lease.Lease
	holdCtx context.Context

	seq atomic.Int64 // the LEASE requests' numbers in the history

	mu        sync.Mutex
	epoch     int
	acqKind   string
	acqPrev   string
	acqDetail string
}

// Label names the i-th lease of a run in the logs: "p0", "p1", ...
func Label(i int) string { return "p" + strconv.Itoa(i) }

// JoinKey returns prefix/name, or name for the empty prefix.
func JoinKey(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return strings.TrimRight(prefix, "/") + "/" + name
}

func (w *prefixWorker) key(name string) string { return JoinKey(w.prefix, name) }

func (w *prefixWorker) log(e Entry) {
	e.Prefix = w.label
	w.cfg.Log.Log(e)
}

func (w *prefixWorker) onEvent(e lease.Event) {
	if e.Kind == lease.EventAcquired || e.Kind == lease.EventTookOver {
		w.mu.Lock()
		w.acqKind, w.acqPrev, w.acqDetail = e.Kind.String(), "", e.Detail
		if e.Previous != nil {
			w.acqPrev = e.Previous.InstanceID
		}
		w.mu.Unlock()
	}
	w.mu.Lock()
	epoch := w.epoch
	w.mu.Unlock()
	en := Entry{Ev: EvLease, Epoch: epoch, Kind: e.Kind.String(), Ver: string(e.Version), Detail: e.Detail}
	if e.Err != nil {
		en.Err = e.Err.Error()
		en.Clock = errors.Is(e.Err, lease.ErrClock)
	}
	if e.Previous != nil {
		en.Holder = e.Previous.InstanceID
	}
	w.log(en)
}

// jitter returns d plus up to half of d, at random.
func (w *prefixWorker) jitter(d time.Duration) time.Duration {
	return d + time.Duration(w.rng.Int64N(int64(d)/2+1))
}

func (w *prefixWorker) run(ctx context.Context) error {
	ttl := w.cfg.TTL
	// The lease's requests on its LEASE object are logged, for the
	// linearizability check; the lie-refusal control lies below the log.
	lb := w.b
	if w.cfg.LieRefusal {
		lb = liar{Bucket: lb, key: admin.Key(w.prefix), once: &sync.Once{}}
	}
	if w.cfg.NoServiceTime {
		lb = faulty.NoServiceTime(lb)
	}
	lb = recorder{Bucket: lb, key: admin.Key(w.prefix), log: w.log, seq: &w.seq}
	w.lb = lb
	c, err := lease.NewContender(bucket.New(lb, w.prefix), leaseseam.With(&lease.Options{InstanceID: w.cfg.ID, TTL: ttl, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), OnEvent: w.onEvent}, leaseseam.Seams{Clock: w.cfg.clock()}))
	if err != nil {
		return err
	}
	var last *lease.Lease
	defer func() {
		if last != nil {
			w.release(last)
		}
	}()
	for ctx.Err() == nil {
		w.log(Entry{Ev: EvAcquireStart})
		actx, cancel := context.WithTimeout(ctx, 2*ttl)
		l, err := c.Acquire(actx)
		cancel()
		if err != nil {
			w.logAcquireFail(err)
			sleepCtx(ctx, w.jitter(ttl/5))
			continue
		}
		w.mu.Lock()
		w.epoch++
		epoch, kind, detail := w.epoch, w.acqKind, w.acqDetail
		w.mu.Unlock()
		last = l
		w.log(Entry{Ev: EvAcquireOK, Epoch: epoch, Ver: string(leaseseam.Inside(l).Version), Kind: kind, Detail: detail,
			HolderRenewed: leaseseam.Inside(l).RenewedAt.UnixNano(), LeaseEpoch: l.Epoch()})
		w.hold(ctx, l, epoch)
		if errors.Is(l.Err(), lease.ErrLost) {
			w.lostRead(l, epoch)
			sleepCtx(ctx, w.jitter(ttl/5))
		}
	}
	return nil
}

func (w *prefixWorker) logAcquireFail(err error) {
	e := Entry{Ev: EvAcquireFail, Err: err.Error()}
	e.Clock = errors.Is(err, lease.ErrClock)
	var he *lease.HeldError
	if errors.As(err, &he) {
		e.Err = "held"
		e.State = he.State.String()
		e.HolderVer = string(he.Version)
		if he.Service != nil {
			e.ServiceRes = he.Service.Resolution
		}
		if he.Record != nil {
			e.Holder = he.Record.InstanceID
			e.HolderRenewed = he.Record.RenewedAt.UnixNano()
			e.HolderTTL = he.Record.TTLSeconds
		}
	}
	w.log(e)
}

// hold writes backups under l until the lease ends or ctx is done.
func (w *prefixWorker) hold(ctx context.Context, l *lease.Lease, epoch int) {
	ttl := w.cfg.TTL
	work, stop := l.Fence(ctx)
	defer stop()
	wb, wctx := l.Bucket().Driver(), work
	keepCtx := work
	if w.cfg.NoFence {
		// The broken worker: raw bucket (through the recorder, which
		// passes data writes on), no fence, and it carries on until it
		// learns the lease is lost. Its writes carry the lease's stamp,
		// as a stale holder's requests through the fenced bucket do, so
		// that the late check (late-write) sees them.
		wb, wctx, keepCtx = stamped(w.lb, l), ctx, ctx
	}
	w.cur, w.holdCtx = l, ctx
	kept := make(chan error, 1)
	go func() { kept <- l.Keep(keepCtx) }()
	defer func() { stop(); <-kept }()
	lastCheck := time.Now()
	for n := 1; ctx.Err() == nil; n++ {
		if w.cfg.NoFence {
			switch err := l.Err(); {
			case err == nil:
			case errors.Is(err, lease.ErrFenced):
				if time.Since(lastCheck) > ttl/3 {
					lastCheck = time.Now()
					rctx, cancel := context.WithTimeout(ctx, ttl)
					_ = leaseseam.Renew(rctx, l) // fenced: reads, and reports ErrLost if taken over
					cancel()
				}
			default:
				return
			}
		} else if work.Err() != nil {
			return
		}
		w.backup(wctx, wb, epoch, n)
		sleepCtx(wctx, w.jitter(ttl/8))
	}
}

// backup writes one backup: chunks, manifest, sealed manifest, LATEST. It
// stops at the first failed step. Names are relative to the prefix, as
// Lease.Bucket takes them; the logs and the objects' contents carry the
// full keys.
func (w *prefixWorker) backup(ctx context.Context, b driver.Bucket, epoch, n int) {
	rctx, cancel := context.WithTimeout(ctx, w.cfg.TTL)
	data, latest, err := objects.ReadAll(rctx, b, w.wkey("LATEST"), 64<<10, driver.GetOptions{})
	cancel()
	vLatest := latest.Version
	k := 1
	switch {
	case err == nil:
		prev, _ := strconv.Atoi(Fields(data)["k"])
		k = prev + 1
	case errors.Is(err, driver.ErrNotExist):
		vLatest = ""
	default:
		return
	}
	tag := fmt.Sprintf("%s.e%d.b%d", w.cfg.Proc, epoch, n)
	var chunks []string
	for j := range 2 {
		name := fmt.Sprintf("chunks/%s/%d", tag, j)
		body := fmt.Sprintf("chunk proc=%s epoch=%d tag=%s j=%d", w.cfg.Proc, epoch, tag, j)
		put := w.put
		every := streamEvery
		if w.cfg.CalmStreams {
			every = 2 * streamEvery
		}
		if j == 0 && (n%every == 0 || w.cfg.StreamUnfenced) {
			// Now and then a big chunk, streamed in parts; its first
			// line says how long the whole object must be.
			put = w.putStream
			body += fmt.Sprintf(" size=%d", streamSize)
		}
		if _, err := put(ctx, b, epoch, name, body, driver.IfAbsent(), ""); err != nil {
			return
		}
		chunks = append(chunks, w.key(name))
	}
	parent := ""
	if err == nil {
		parent = Fields(data)["manifest"]
	}
	mname := "manifests/" + tag
	manifest := func(sealed bool) string {
		return fmt.Sprintf("manifest k=%d proc=%s epoch=%d tag=%s sealed=%v parent=%s chunks=%s",
			k, w.cfg.Proc, epoch, tag, sealed, parent, strings.Join(chunks, ","))
	}
	vM, err := w.put(ctx, b, epoch, mname, manifest(false), driver.IfAbsent(), "")
	if err != nil {
		return
	}
	if _, err := w.put(ctx, b, epoch, mname, manifest(true), driver.IfMatch(vM), ""); err != nil {
		return
	}
	cond := driver.IfAbsent()
	if vLatest != "" {
		cond = driver.IfMatch(vLatest)
	}
	body := fmt.Sprintf("latest k=%d manifest=%s proc=%s epoch=%d tag=%s", k, w.key(mname), w.cfg.Proc, epoch, tag)
	_, _ = w.put(ctx, b, epoch, "LATEST", body, cond, string(vLatest))
}

// wkey is the key to hand the writing bucket for name: relative for
// Lease.Bucket, full for the raw bucket of the fence-disabled control.
func (w *prefixWorker) wkey(name string) string {
	if w.cfg.NoFence {
		return w.key(name)
	}
	return name
}

// put logs the write's start, sends it, and logs its outcome; the logs
// carry the full key.
func (w *prefixWorker) put(ctx context.Context, b driver.Bucket, epoch int, name, body string, cond driver.Condition, prev string) (driver.Version, error) {
	key := w.key(name)
	w.log(Entry{Ev: EvWriteStart, Epoch: epoch, Key: key, Cond: cond.String(), Prev: prev})
	pctx, cancel := context.WithTimeout(ctx, w.cfg.TTL)
	a, err := b.Put(pctx, w.wkey(name), []byte(body), driver.PutOptions{If: cond})
	cancel()
	v := a.Version
	e := Entry{Ev: EvWriteEnd, Epoch: epoch, Key: key, Cond: cond.String(), OK: err == nil, Ver: string(v), Prev: prev}
	if err != nil {
		e.Err = err.Error()
		e.Refused = refusedToStart(err)
	}
	w.log(e)
	return v, err
}

// streamEvery: the first chunk of every streamEvery-th backup is a big one,
// streamed through the fenced bucket (driver.PutStream) in parts of
// driver.MinPartSize (three parts: two whole ones and one byte): its body is
// the chunk's line followed by padding, to streamSize bytes. The padding is
// produced at a pace (streamPace) that spreads the upload over about
// TTL/2, as a dump piped from another program is, so that a multipart
// upload is open, with parts in flight, during a good share of the pauses,
// kills and partitions on every driver, not only on the slow ones. A
// streamed write gets streamTimeout TTLs before its context ends.
const (
	streamEvery   = 4
	streamSize    = 2*driver.MinPartSize + 1
	streamTimeout = 2
)

// streamPace is how long the padding of a streamed chunk takes to produce.
func streamPace(ttl time.Duration) time.Duration { return ttl / 2 }

// putStream is put for a big chunk: the body, padded with newlines to
// streamSize bytes at the pace streamPace sets, is streamed with
// driver.PutStream, which commits it under cond only at its last step.
func (w *prefixWorker) putStream(ctx context.Context, b driver.Bucket, epoch int, name, body string, cond driver.Condition, prev string) (driver.Version, error) {
	key := w.key(name)
	w.log(Entry{Ev: EvWriteStart, Epoch: epoch, Key: key, Cond: cond.String(), Prev: prev, Detail: fmt.Sprintf("streamed, %d bytes", streamSize)})
	pace := streamPace(w.cfg.TTL)
	if w.cfg.CalmStreams {
		pace = 0
	}
	pad := &padding{n: streamSize - int64(len(body)), total: streamSize - int64(len(body)), pace: pace, start: time.Now()}
	wkey, timeout := w.wkey(name), streamTimeout*w.cfg.TTL
	if w.cfg.StreamUnfenced && w.cur != nil {
		// The control: past the fence, with the rest of the body held
		// back until the lease may no longer write.
		l := w.cur
		b, ctx, wkey, timeout = stamped(w.lb, l), w.holdCtx, key, 20*w.cfg.TTL
		pad.until = func() bool { return !l.MayWrite() }
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	r := io.MultiReader(strings.NewReader(body), pad)
	a, err := b.PutStream(pctx, wkey, r, driver.PutOptions{If: cond}, &driver.StreamOptions{PartSize: driver.MinPartSize, Concurrency: 1})
	cancel()
	v := a.Version
	e := Entry{Ev: EvWriteEnd, Epoch: epoch, Key: key, Cond: cond.String(), OK: err == nil, Ver: string(v), Prev: prev, Detail: "streamed"}
	if err != nil {
		e.Err = err.Error()
		e.Refused = refusedToStart(err)
	}
	w.log(e)
	return v, err
}

// stamped returns b writing l's stamp as the metadata of every write
// (driver.PutOptions.Metadata): what the lease's fenced bucket would have
// written on the objects of a write sent past it. It is b where the lease
// stamps nothing.
func stamped(b driver.Bucket, l *lease.Lease) driver.Bucket {
	if leaseseam.Inside(l).Stamped {
		st := admin.Stamp{Epoch: l.Epoch(), Instance: admin.StampedInstance(l.InstanceID())}
		return stampBucket{Bucket: b, md: st.Metadata()}
	}
	return b
}

// stampBucket writes md as the metadata of every Put and PutStream that
// carries none of its own.
type stampBucket struct {
	driver.Bucket
	md driver.Metadata
}

func (s stampBucket) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	if opts.Metadata == nil {
		opts.Metadata = s.md
	}
	return s.Bucket.Put(ctx, key, data, opts)
}

func (s stampBucket) PutStream(ctx context.Context, key string, r io.Reader, opts driver.PutOptions, so *driver.StreamOptions) (driver.Attrs, error) {
	if opts.Metadata == nil {
		opts.Metadata = s.md
	}
	return s.Bucket.PutStream(ctx, key, r, opts, so)
}

// padding reads as n newlines, produced evenly over pace from start: a
// Read blocks (at most paceStep) until some of them are due. With until
// set, the second half is held back (each Read sleeping paceStep) until
// until reports true.
type padding struct {
	n, total int64
	pace     time.Duration
	start    time.Time
	until    func() bool
}

// paceStep bounds how long one Read of padding sleeps, so that a caller
// that looks at its context between Reads (multipart.ReadPart does) stops soon.
const paceStep = 20 * time.Millisecond

func (p *padding) Read(b []byte) (int, error) {
	if p.n <= 0 {
		return 0, io.EOF
	}
	k := min(int64(len(b)), p.n)
	if p.until != nil && p.n <= p.total/2 && !p.until() {
		time.Sleep(paceStep)
		return 0, nil
	}
	if p.pace > 0 {
		sent := p.total - p.n
		due := func() int64 {
			el := time.Since(p.start)
			if el >= p.pace {
				return p.total
			}
			return int64(float64(p.total) * float64(el) / float64(p.pace))
		}
		if due() <= sent {
			time.Sleep(paceStep)
		}
		k = min(k, max(due()-sent, 1))
	}
	for done := int64(0); done < k; {
		done += int64(copy(b[done:k], newlines[:]))
	}
	p.n -= k
	return int(k), nil
}

// newlines is what padding copies from (a copy, not a loop of stores,
// which the race detector would instrument byte by byte).
var newlines = func() (nl [64 << 10]byte) {
	for i := range nl {
		nl[i] = '\n'
	}
	return nl
}()

// refusedToStart reports whether the lease's fenced bucket refused a write
// without sending it.
func refusedToStart(err error) bool {
	var oe *driver.OpError
	return errors.As(err, &oe) && oe.Driver == "lease" && oe.Err != nil && strings.HasPrefix(oe.Err.Error(), "refused to start")
}

// lostRead reads the LEASE object right after the lease was reported lost
// and logs what the bucket held.
func (w *prefixWorker) lostRead(l *lease.Lease, epoch int) {
	ctx, cancel := context.WithTimeout(context.Background(), w.cfg.TTL)
	defer cancel()
	e := Entry{Ev: EvLostRead, Epoch: epoch, Ver: string(leaseseam.Inside(l).Version)}
	data, a, err := objects.ReadAll(ctx, w.b, admin.Key(w.prefix), admin.MaxRecordSize, driver.GetOptions{})
	v := a.Version
	switch {
	case errors.Is(err, driver.ErrNotExist):
		e.State = "absent"
	case err != nil:
		e.Err = err.Error()
	default:
		e.HolderVer = string(v)
		if rec, derr := admin.DecodeRecord(data); derr != nil {
			e.State = "malformed"
		} else {
			e.State = "record"
			e.Holder, e.HolderTTL, e.HolderRenewed = rec.InstanceID, rec.TTLSeconds, rec.RenewedAt.UnixNano()
		}
	}
	w.log(e)
}

func (w *prefixWorker) release(l *lease.Lease) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*w.cfg.TTL)
	defer cancel()
	w.log(Entry{Ev: EvReleaseStart, Ver: string(leaseseam.Inside(l).Version)})
	e := Entry{Ev: EvReleaseEnd}
	if err := l.Release(ctx); err != nil {
		e.Err = err.Error()
	}
	w.log(e)
}

// Fields parses "kind a=1 b=2" into a map.
func Fields(data []byte) map[string]string {
	m := map[string]string{}
	for _, f := range strings.Fields(string(data)) {
		if k, v, ok := strings.Cut(f, "="); ok {
			m[k] = v
		}
	}
	return m
}

// sleepCtx sleeps d or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// RunChild is the writer that runs under bucketlease hold (the CLI worker):
// it has no lease of its own, only the one hold took before it started it,
// so it writes through the raw bucket until SIGTERM, and hold (and its
// watchdog) must stop it in time. It logs its start as the acquisition of
// epoch 1, dated by the LEASE object's acquired_at when that names hold's
// instance (BUCKETLEASE_INSTANCE_ID), and otherwise by its own start, with
// the lease's epoch hold handed it (BUCKETLEASE_EPOCH), which it stamps on
// every object it writes, the stamp "bucketlease put" inside hold writes.
func RunChild(ctx context.Context, cfg WorkerConfig) error {
	if len(cfg.URLs) != 1 {
		return errors.New("the child writes under one lease")
	}
	if !cfg.Deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, cfg.Deadline)
		defer cancel()
	}
	b, prefix, err := location.Open(context.Background(), cfg.URLs[0])
	if err != nil {
		return err
	}
	cfg.NoFence = true // raw bucket, full keys
	w := &prefixWorker{cfg: cfg, b: b, prefix: prefix, label: Label(0),
		rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))}
	// The recorder logs the requests of streamed writes; with no key it
	// logs no LEASE history (the child's lease is hold's, unlogged).
	w.lb = recorder{Bucket: b, log: w.log, seq: &w.seq}
	start := time.Now()
	cfg.Log.Log(Entry{Ev: EvStart, Detail: "child of bucketlease hold"})
	e := Entry{Ev: EvAcquireOK, Epoch: 1, Kind: "cli"}
	if n, err := strconv.ParseUint(os.Getenv("BUCKETLEASE_EPOCH"), 10, 64); err == nil && n > 0 {
		e.LeaseEpoch = n
		st := admin.Stamp{Epoch: n, Instance: admin.StampedInstance(cfg.ID)}
		w.lb = stampBucket{Bucket: w.lb, md: st.Metadata()}
	}
	rctx, cancel := context.WithTimeout(ctx, cfg.TTL)
	data, a, err := objects.ReadAll(rctx, b, admin.Key(prefix), admin.MaxRecordSize, driver.GetOptions{})
	cancel()
	v := a.Version
	rec, derr := admin.DecodeRecord(data)
	acqStart := start
	switch {
	case err != nil:
		e.Detail = "the LEASE object could not be read: " + err.Error()
	case derr != nil:
		e.Detail = "the LEASE object is not a record"
	case rec.InstanceID != cfg.ID:
		e.Detail = "the LEASE object already names " + rec.InstanceID
		e.Holder = rec.InstanceID
	default:
		e.Ver = string(v)
		acqStart = rec.AcquiredAt
		if acqStart.After(start) {
			acqStart = start
		}
	}
	// The acquisition happened between acqStart and now.
	w.log(Entry{Ev: EvAcquireStart, T: acqStart.UnixNano()})
	w.log(e)
	for n := 1; ctx.Err() == nil; n++ {
		w.backup(ctx, w.lb, 1, n)
		sleepCtx(ctx, w.jitter(cfg.TTL/8))
	}
	cfg.Log.Log(Entry{Ev: EvExit})
	return nil
}
