package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptrace"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/internal/leaseseam"
	"github.com/mushroomdb/bucketlease/lease"
)

// RenewLoad is the setting of RenewUnderLoad.
type RenewLoad struct {
	// TTLs are the leases held at once, one per TTL, each renewed by its
	// own Keep through the same bucket (the same client and pool).
	TTLs []time.Duration
	// Hold is how long the uploads run; every lease is renewed
	// throughout.
	Hold time.Duration
	// Writers is the number of streamed uploads kept in flight; writer i
	// writes through Lease.Bucket() of lease i mod len(TTLs).
	Writers int
	// Body is the size of each upload; a writer starts the next as soon
	// as one ends.
	Body int64
	// Offered is the rate, bytes a second over all writers, at which the
	// writers' bodies can be read: 4× the link's rate saturates it 4 times
	// over.
	Offered float64
	// Stream are the part size and concurrency of each upload.
	Stream driver.StreamOptions
	// Idle is the number of renewals of each lease timed before the
	// uploads start, on the idle link: the baseline.
	Idle int
	// Carried, if set, returns the bytes the link has carried towards the
	// service so far; it is read when the uploads start and when they end.
	Carried func() int64
}

// LeaseUnderLoad is what one lease saw while the uploads ran.
type LeaseUnderLoad struct {
	TTL      time.Duration
	Renewals int           // renewals whose write completed, timed
	Failed   int64         // EventRenewalFailed (retried)
	Spurious int64         // EventFenced or EventLost: nobody else touches the prefix
	P50, P99 time.Duration // latency of a renewal's conditional Put
	Max      time.Duration
	IdleP50  time.Duration // the same, of the renewals timed before the load
	IdleMax  time.Duration
	Slowest  string   // the slowest renewal under load, by phase
	Failures []string // renewal Puts that failed under load (the first 10)
	Fences   []string // why the lease was fenced or lost, if it was
}

// String renders one lease's result as one line, which benchsummary reads.
func (r LeaseUnderLoad) String() string {
	return fmt.Sprintf("lease ttl %v under load: %d renewals (%d failed), %d spurious fences/losses, renewal p50 %v p99 %v max %v (limit %v); idle link: p50 %v max %v",
		r.TTL, r.Renewals, r.Failed, r.Spurious, r.P50, r.P99, r.Max, r.TTL/6, r.IdleP50, r.IdleMax)
}

// LoadResult is what RenewUnderLoad measured.
type LoadResult struct {
	Leases    []LeaseUnderLoad
	Committed int64         // uploads committed
	Aborted   int64         // uploads cut short by the end of the hold or a fence
	Bytes     int64         // bytes of the committed uploads
	Elapsed   time.Duration // from the first upload to the last upload's return
	LinkBytes int64         // what Carried counted while the uploads ran
}

// RenewUnderLoad acquires one lease per TTL on distinct prefixes of b,
// keeps each renewed with Keep, and for cfg.Hold keeps cfg.Writers
// streamed IfAbsent uploads in flight through the leases' Bucket(), each
// body read at cfg.Offered/cfg.Writers bytes a second at most (so the
// writers offer cfg.Offered in all), then releases the leases. Every
// renewal's conditional Put is timed (b is wrapped). Committed uploads
// are deleted as they complete. A fence of any lease is spurious: nobody
// else writes these prefixes.
func RenewUnderLoad(ctx context.Context, b driver.Bucket, root string, cfg RenewLoad) (LoadResult, error) {
	var res LoadResult
	if len(cfg.TTLs) == 0 || cfg.Writers <= 0 || cfg.Body <= 0 || cfg.Hold <= 0 || cfg.Offered <= 0 {
		return res, fmt.Errorf("RenewUnderLoad: incomplete setting %+v", cfg)
	}
	tb := &timedBucket{Bucket: b, lat: map[string]*latencies{}}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	type held struct {
		l                *lease.Lease
		failed, spurious atomic.Int64
		ttl              time.Duration
		lat, idle        *latencies
		keepDone         chan error
		mu               sync.Mutex
		fences           []string
	}
	keepCtx, stopKeeping := context.WithCancel(ctx)
	defer stopKeeping()
	var hs []*held
	for i, ttl := range cfg.TTLs {
		h := &held{ttl: ttl, keepDone: make(chan error, 1)}
		prefix := fmt.Sprintf("%s/ttl%d-%v", root, i, ttl)
		h.lat = tb.watch(prefix + "/LEASE")
		l, err := lease.Acquire(ctx, bucket.New(tb, prefix), leaseseam.With(&lease.Options{TTL: ttl, Logger: quiet, OnEvent: func(e lease.Event) {
			switch e.Kind {
			case lease.EventRenewalFailed:
				h.failed.Add(1)
			case lease.EventFenced, lease.EventLost:
				h.spurious.Add(1)
				h.mu.Lock()
				h.fences = append(h.fences, fmt.Sprintf("%s at %s: %s (%v)", e.Kind, e.Time.Format("15:04:05.000"), e.Detail, e.Err))
				h.mu.Unlock()
			}
		}}, leaseseam.Seams{Getenv: func(string) string { return "" }}))

		if err != nil {
			for _, h := range hs {
				_ = h.l.Release(ctx)
			}
			return res, fmt.Errorf("lease at TTL %v: %w", ttl, err)
		}
		h.l = l
		go func() { h.keepDone <- l.Keep(keepCtx) }()
		hs = append(hs, h)
	}
	// The first conditional streamed write of a lease proves the commit's
	// condition on a scratch key: do it now, before the timing starts.
	for _, h := range hs {
		if _, err := h.l.Bucket().Driver().PutStream(ctx, "warm-up", Body(1), driver.PutOptions{If: driver.IfAbsent()}, &cfg.Stream); err != nil {
			return res, fmt.Errorf("warm-up write at TTL %v: %w", h.ttl, err)
		}
		_ = h.l.Bucket().Driver().Delete(ctx, "warm-up", driver.Condition{})
	}
	// The baseline: renewals on the idle link (Renew is safe beside Keep:
	// they take turns).
	for _, h := range hs {
		tb.start()
		for range cfg.Idle {
			if err := leaseseam.Renew(ctx, h.l); err != nil {
				return res, fmt.Errorf("idle renewal at TTL %v: %w", h.ttl, err)
			}
		}
		tb.stop()
		h.idle = &latencies{ds: h.lat.take()}
	}
	var carried0 int64
	if cfg.Carried != nil {
		carried0 = cfg.Carried()
	}
	tb.start()

	loadCtx, stopLoad := context.WithTimeout(ctx, cfg.Hold)
	defer stopLoad()
	var wg sync.WaitGroup
	var committed, aborted, bytes atomic.Int64
	var firstErr syncErr
	t0 := time.Now()
	for w := range cfg.Writers {
		h := hs[w%len(hs)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			fb := h.l.Bucket().Driver()
			for n := 0; loadCtx.Err() == nil; n++ {
				key := fmt.Sprintf("load/w%02d-%06d", w, n)
				r := &pacedReader{r: Body(cfg.Body), rate: cfg.Offered / float64(cfg.Writers), start: time.Now()}
				_, err := fb.PutStream(loadCtx, key, r, driver.PutOptions{If: driver.IfAbsent()}, &cfg.Stream)
				switch {
				case err == nil:
					committed.Add(1)
					bytes.Add(cfg.Body)
					_ = b.Delete(context.WithoutCancel(ctx), strings.TrimSuffix(h.l.Key(), "LEASE")+key, driver.Condition{})
				case loadCtx.Err() != nil:
					aborted.Add(1)
					return
				case !h.l.MayWrite():
					aborted.Add(1) // the fence; counted as spurious by the lease
					return
				default:
					firstErr.set(fmt.Errorf("upload %s: %w", key, err))
					return
				}
			}
		}()
	}
	wg.Wait()
	res.Elapsed = time.Since(t0)
	tb.stop()
	if cfg.Carried != nil {
		res.LinkBytes = cfg.Carried() - carried0
	}
	res.Committed, res.Aborted, res.Bytes = committed.Load(), aborted.Load(), bytes.Load()

	var errs []error
	for _, h := range hs {
		ds := h.lat.snapshot()
		r := LeaseUnderLoad{TTL: h.ttl, Renewals: len(ds), Failed: h.failed.Load(), Spurious: h.spurious.Load()}
		if len(ds) > 0 {
			slices.Sort(ds)
			r.P50, r.P99, r.Max = quantile(ds, 0.50), quantile(ds, 0.99), ds[len(ds)-1]
		}
		slow, fails := h.lat.report()
		r.Slowest, r.Failures = slow.String(), fails
		h.mu.Lock()
		r.Fences = slices.Clone(h.fences)
		h.mu.Unlock()
		if idle := h.idle.snapshot(); len(idle) > 0 {
			slices.Sort(idle)
			r.IdleP50, r.IdleMax = quantile(idle, 0.50), idle[len(idle)-1]
		}
		res.Leases = append(res.Leases, r)
		if err := h.l.Release(ctx); err != nil && !errors.Is(err, lease.ErrFenced) && !errors.Is(err, lease.ErrLost) {
			errs = append(errs, err)
		}
	}
	stopKeeping()
	for _, h := range hs {
		<-h.keepDone
	}
	if err := firstErr.get(); err != nil {
		errs = append(errs, err)
	}
	return res, errors.Join(errs...)
}

// quantile is the q-quantile of sorted ds, by the nearest-rank method:
// the smallest value with at least q of the samples at or below it.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(q*float64(len(sorted)) + 0.999999)
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// latencies are the timed Puts of one key: the durations of those that
// succeeded, the phases of the slowest, and what failed.
type latencies struct {
	mu       sync.Mutex
	ds       []time.Duration
	slowest  phases
	failures []string
}

// phases split one renewal's Put by its HTTP client trace (of its last
// attempt when the SDK retried): waiting for a connection from the pool
// (or dialling one), writing the request into the connection, and from
// then to the first byte of the answer: the request's wait in the link's
// queue, the server, and the answer's way back.
type phases struct {
	Total, ConnWait, Send, Answer time.Duration
	Reused                        bool
	Attempts                      int
}

func (p phases) String() string {
	return fmt.Sprintf("%v = waiting for a connection %v (reused %v) + writing the request %v + the link's queue, the server and the answer's first byte %v, %d attempt(s)",
		p.Total, p.ConnWait, p.Reused, p.Send, p.Answer, p.Attempts)
}

func (l *latencies) addPhases(p phases) {
	l.mu.Lock()
	l.ds = append(l.ds, p.Total)
	if p.Total > l.slowest.Total {
		l.slowest = p
	}
	l.mu.Unlock()
}

func (l *latencies) fail(p phases, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.failures) < 10 {
		l.failures = append(l.failures, fmt.Sprintf("after %v: %v", p, err))
	}
}

// report returns the slowest renewal's phases and the failures noted.
func (l *latencies) report() (phases, []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.slowest, slices.Clone(l.failures)
}

// take returns the latencies and forgets them.
func (l *latencies) take() []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	ds := l.ds
	l.ds = nil
	return ds
}

func (l *latencies) snapshot() []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.ds)
}

// timedBucket times every conditional Put on the watched keys (the lease
// objects: a renewal is one Put with If-Match) between start and stop,
// and passes everything else, streamed writes and listing included,
// through to the bucket it wraps.
type timedBucket struct {
	driver.Bucket
	on  atomic.Bool
	mu  sync.Mutex
	lat map[string]*latencies
}

func (t *timedBucket) watch(key string) *latencies {
	t.mu.Lock()
	defer t.mu.Unlock()
	l := &latencies{}
	t.lat[key] = l
	return l
}

func (t *timedBucket) start() { t.on.Store(true) }
func (t *timedBucket) stop()  { t.on.Store(false) }

// Put times a renewal: an If-Match Put on a watched key while on.
func (t *timedBucket) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	t.mu.Lock()
	l := t.lat[key]
	t.mu.Unlock()
	_, match := opts.If.Match()
	if l == nil || !match || !t.on.Load() {
		return t.Bucket.Put(ctx, key, data, opts)
	}
	var (
		mu                                 sync.Mutex
		getConn, gotConn, wrote, firstByte time.Time
		reused                             bool
		attempts                           int
	)
	at := func(p *time.Time) {
		mu.Lock()
		*p = time.Now()
		mu.Unlock()
	}
	trace := &httptrace.ClientTrace{
		GetConn: func(string) {
			mu.Lock()
			attempts++
			mu.Unlock()
			at(&getConn)
		},
		GotConn: func(i httptrace.GotConnInfo) {
			at(&gotConn)
			mu.Lock()
			reused = i.Reused
			mu.Unlock()
		},
		WroteRequest:         func(httptrace.WroteRequestInfo) { at(&wrote) },
		GotFirstResponseByte: func() { at(&firstByte) },
	}
	t0 := time.Now()
	a, err := t.Bucket.Put(httptrace.WithClientTrace(ctx, trace), key, data, opts)
	mu.Lock()
	p := phases{Total: time.Since(t0), Reused: reused, Attempts: attempts}
	if !getConn.IsZero() && !gotConn.IsZero() {
		p.ConnWait = gotConn.Sub(getConn)
	}
	if !gotConn.IsZero() && !wrote.IsZero() {
		p.Send = wrote.Sub(gotConn)
	}
	if !wrote.IsZero() && !firstByte.IsZero() {
		p.Answer = firstByte.Sub(wrote)
	}
	mu.Unlock()
	if err == nil {
		l.addPhases(p)
	} else {
		l.fail(p, err)
	}
	return a, err
}

// pacedReader reads r no faster than rate bytes a second since start.
type pacedReader struct {
	r     io.Reader
	rate  float64
	start time.Time
	read  int64
}

func (p *pacedReader) Read(b []byte) (int, error) {
	if len(b) > 256<<10 {
		b = b[:256<<10]
	}
	due := p.start.Add(time.Duration(float64(p.read+int64(len(b))) / p.rate * float64(time.Second)))
	if d := time.Until(due); d > 0 {
		time.Sleep(d)
	}
	n, err := p.r.Read(b)
	p.read += int64(n)
	return n, err
}
