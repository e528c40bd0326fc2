package bench

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A StreamOp writes one body of unknown length, read from r to its end,
// under key: through Lease.Bucket() on the driver side, with the SDK's own
// uploader on the raw side. Clean removes what it wrote, outside the timing.
type StreamOp func(ctx context.Context, key string, r io.Reader) error

// StreamPair is one streamed write measured two ways against the same
// server, at the same part size and concurrency.
type StreamPair struct {
	Name   string
	Driver StreamOp
	Raw    StreamOp
	// Clean deletes key after a write of either side (nil: nothing to
	// delete), so that the emulator's disk or memory stays bounded.
	Clean func(ctx context.Context, key string) error
}

// StreamResult is the result of writing a StreamPair's two sides
// alternately, one body of Size bytes per call.
type StreamResult struct {
	Rounds int
	Size   int64
	// DriverRate and RawRate are the median throughputs, bytes a second.
	DriverRate, RawRate float64
	// PairedRatio is the median over rounds of driver ÷ raw throughput
	// within the round.
	PairedRatio float64
	// DriverHeap and RawHeap are the largest heap growth seen during any
	// one call of each side: the peak of HeapInuse while the write ran,
	// less HeapInuse right before it (after a GC). Garbage not yet
	// collected counts: with GOGC=100 the heap may grow to twice what is
	// live before the collector runs.
	DriverHeap, RawHeap uint64
	// DriverLive and RawLive are the same for the live heap (what the
	// last GC found reachable, /gc/heap/live:bytes): what the write
	// holds, garbage aside.
	DriverLive, RawLive uint64
}

// Ratio is DriverRate/RawRate: 1.0 means the driver streams as fast as the
// SDK's uploader; 0 if nothing was measured.
func (r StreamResult) Ratio() float64 {
	if r.RawRate <= 0 {
		return 0
	}
	return r.DriverRate / r.RawRate
}

// InterleaveStreams writes p's two sides rounds times each, a body of size
// bytes of unknown length per call (Body), alternating which side goes
// first, and times each call and samples its heap. Every call writes a
// fresh key, deleted after it (not timed). The first error stops the run.
func InterleaveStreams(ctx context.Context, p StreamPair, rounds int, size int64) (StreamResult, error) {
	s := NewStreamRun(p, size)
	for range rounds {
		if err := s.Round(ctx); err != nil {
			return s.Result(), err
		}
	}
	return s.Result(), nil
}

// StreamRun is InterleaveStreams one round at a time, for a benchmark's
// b.Loop.
type StreamRun struct {
	p          StreamPair
	size       int64
	rounds     int // rounds started
	call       int
	drv, raw   []float64
	drvH, rawH uint64
	drvL, rawL uint64
}

// NewStreamRun starts a run of p with bodies of size bytes.
func NewStreamRun(p StreamPair, size int64) *StreamRun { return &StreamRun{p: p, size: size} }

// Round writes one body with each side, the driver first in even rounds
// and the raw SDK first in odd ones.
func (s *StreamRun) Round(ctx context.Context) error {
	first := func() error { return s.one(ctx, "driver", s.p.Driver, &s.drv, &s.drvH, &s.drvL) }
	second := func() error { return s.one(ctx, "raw", s.p.Raw, &s.raw, &s.rawH, &s.rawL) }
	if s.rounds%2 == 1 {
		first, second = second, first
	}
	s.rounds++
	if err := first(); err != nil {
		return err
	}
	return second()
}

func (s *StreamRun) one(ctx context.Context, side string, op StreamOp, rates *[]float64, peak, live *uint64) error {
	s.call++
	key := fmt.Sprintf("%s-stream/%04d", side[:1], s.call)
	h := StartHeapSampler()
	t0 := time.Now()
	err := op(ctx, key, Body(s.size))
	took := time.Since(t0)
	grew, lived := h.Stop()
	if err != nil {
		return fmt.Errorf("%s %s write %d: %w", s.p.Name, side, s.call, err)
	}
	*rates = append(*rates, float64(s.size)/took.Seconds())
	*peak, *live = max(*peak, grew), max(*live, lived)
	if s.p.Clean != nil {
		if err := s.p.Clean(ctx, key); err != nil {
			return fmt.Errorf("%s %s: deleting %s: %w", s.p.Name, side, key, err)
		}
	}
	return nil
}

// Result summarises the rounds so far (those whose two writes both
// succeeded count in the paired ratio).
func (s *StreamRun) Result() StreamResult {
	res := StreamResult{Rounds: min(len(s.drv), len(s.raw)), Size: s.size, DriverHeap: s.drvH, RawHeap: s.rawH,
		DriverLive: s.drvL, RawLive: s.rawL}
	res.DriverRate, res.RawRate = medianFloat(s.drv), medianFloat(s.raw)
	var paired []float64
	for i := range min(len(s.drv), len(s.raw)) {
		if s.raw[i] > 0 {
			paired = append(paired, s.drv[i]/s.raw[i])
		}
	}
	res.PairedRatio = medianFloat(paired)
	return res
}

// medianFloat is the median of vs (the mean of the middle two), 0 for none.
func medianFloat(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// bodyBlock is the repeating content of every Body: random, so that no
// layer can compress it, and generated once.
var bodyBlock = func() []byte {
	b := make([]byte, 1<<20)
	rand.Read(b)
	return b
}()

// Body returns a reader of n bytes whose length no one can learn before
// the end: not a *bytes.Reader, no Len, Size or Seek, so that a driver or
// an SDK uploader must stream it in parts. It allocates nothing while
// read.
func Body(n int64) io.Reader { return &body{left: n} }

type body struct {
	left int64
	off  int
}

func (b *body) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n := 0
	for n < len(p) {
		c := copy(p[n:], bodyBlock[b.off:])
		b.off = (b.off + c) % len(bodyBlock)
		n += c
	}
	b.left -= int64(n)
	return n, nil
}

// HeapSampler samples HeapInuse (runtime/metrics: heap objects plus heap
// unused, which is what MemStats.HeapInuse counts) and the live heap (what
// the last GC found reachable) every millisecond from a goroutine of its
// own, without stopping the world, and keeps the peaks.
type HeapSampler struct {
	base, baseLive uint64
	stop           chan struct{}
	done           chan struct{}
	peak, peakLive uint64
}

// heapInuse reads HeapInuse and the live heap through runtime/metrics.
func heapInuse(s []metrics.Sample) (inuse, live uint64) {
	metrics.Read(s)
	return s[0].Value.Uint64() + s[1].Value.Uint64(), s[2].Value.Uint64()
}

func heapSamples() []metrics.Sample {
	return []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"},
		{Name: "/gc/heap/live:bytes"}}
}

// StartHeapSampler collects garbage, notes HeapInuse as the base, and
// starts sampling.
func StartHeapSampler() *HeapSampler {
	runtime.GC()
	s := heapSamples()
	h := &HeapSampler{stop: make(chan struct{}), done: make(chan struct{})}
	h.base, h.baseLive = heapInuse(s)
	h.peak, h.peakLive = h.base, h.baseLive
	go func() {
		defer close(h.done)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			h.note(s)
			select {
			case <-h.stop:
				return
			case <-t.C:
			}
		}
	}()
	return h
}

func (h *HeapSampler) note(s []metrics.Sample) {
	inuse, live := heapInuse(s)
	h.peak, h.peakLive = max(h.peak, inuse), max(h.peakLive, live)
}

// Stop ends the sampling and returns the peak HeapInuse and the peak live
// heap, each less its base (0 if it never grew).
func (h *HeapSampler) Stop() (inuse, live uint64) {
	close(h.stop)
	<-h.done
	h.note(heapSamples())
	if h.peak > h.base {
		inuse = h.peak - h.base
	}
	if h.peakLive > h.baseLive {
		live = h.peakLive - h.baseLive
	}
	return inuse, live
}

// Size and duration settings of the streaming benchmarks, read from the
// environment so that scripts/bench can run them at full size while a
// plain go test -bench stays quick.
const (
	// EnvStreamSize is the body of each streamed write: bytes, or with a
	// suffix KiB, MiB or GiB. Default 64 MiB; scripts/bench passes 1GiB.
	EnvStreamSize = "BUCKETLEASE_BENCH_STREAM_SIZE"
	// EnvRenewHold is how long BenchmarkStreamRenewals saturates the link
	// (a Go duration). Default 25s; scripts/bench passes 90s.
	EnvRenewHold = "BUCKETLEASE_BENCH_RENEW_HOLD"
	// EnvLinkRate is the bandwidth of BenchmarkStreamRenewals' loopback
	// link in each direction: bytes a second, or with a suffix. Default
	// 8MiB.
	EnvLinkRate = "BUCKETLEASE_BENCH_LINK_RATE"
	// EnvMaxConns, if set above 0, bounds the connections per host of
	// BenchmarkStreamRenewals' client (an experiment; unset in
	// scripts/bench).
	EnvMaxConns = "BUCKETLEASE_BENCH_MAX_CONNS"
)

// ParseSize reads "1GiB", "64MiB", "512KiB" or a plain number of bytes.
func ParseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = strings.TrimSpace(rest), u.m
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("size %q: want a positive number of bytes, KiB, MiB or GiB", s)
	}
	return n * mult, nil
}

// envSize is ParseSize of the variable name, or def if it is unset.
func envSize(name string, def int64) (int64, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	n, err := ParseSize(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return n, nil
}

// envDuration is the Go duration in the variable name, or def if unset.
func envDuration(name string, def time.Duration) (time.Duration, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s=%q: want a positive Go duration", name, v)
	}
	return d, nil
}

// syncErr keeps the first error of several goroutines.
type syncErr struct {
	mu  sync.Mutex
	err error
}

func (e *syncErr) set(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err == nil {
		e.err = err
	}
}

func (e *syncErr) get() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}
