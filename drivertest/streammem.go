package drivertest

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
)

// The memory a streamed write holds (obligation 13): about part size ×
// concurrency, never the whole body. The check fails a driver whose heap
// grew by half a body many parts long.

// memParts makes the body 80 MiB at the minimum part size: half of it is
// about three times what a streaming driver may hold.
const memParts = 16

// heapSample is the runtime metric the check samples: the bytes of heap
// objects, live or not yet swept. Reading it does not stop the world.
const heapSample = "/memory/classes/heap/objects:bytes"

func heapBytes() int64 {
	s := []metrics.Sample{{Name: heapSample}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// heapPeak samples the heap every millisecond until stop is called, which
// returns the highest sample.
func heapPeak() (stop func() int64) {
	var peak atomic.Int64
	peak.Store(heapBytes())
	done, quit := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				if h := heapBytes(); h > peak.Load() {
					peak.Store(h)
				}
			}
		}
	}()
	return func() int64 {
		close(quit)
		<-done
		return max(peak.Load(), heapBytes())
	}
}

func streamMemoryBounded(ctx context.Context, s *scope) error {
	if s.test == "" && !s.opts.inTest {
		return notRun{"it uploads 80 MiB and samples the heap of the process it runs in, so only Run, in a test, runs it"}
	}
	opts := streamOpts(nil)
	size := memParts * opts.PartSize
	bound := size / 2
	// A small GC target keeps the garbage of parts already sent, which a
	// streaming driver drops, from piling up to the size of the body.
	defer debug.SetGCPercent(debug.SetGCPercent(25))
	runtime.GC()
	base := heapBytes()
	stop := heapPeak()
	k := s.key("obj")
	v, err := stream(ctx, s.b, k, newBody(16, size), driver.IfAbsent(), opts)
	peak := stop()
	if sk := notStreamed(err); sk != nil {
		return sk
	}
	if err != nil {
		return fmt.Errorf("PutStream (IfAbsent) of a body of %d parts: %s", memParts, outcome(err))
	}
	runtime.GC()
	if kept := heapBytes() - base; kept > size/2 {
		return skipped{fmt.Sprintf("the store keeps the body in this process's heap (%d MiB of it after the write), "+
			"so the heap shows nothing of what the write held", kept>>20)}
	}
	if grew := peak - base; grew > bound {
		return fmt.Errorf("PutStream of a body of %d MiB in parts of %d MiB, %d at once, grew this process's heap by %d MiB "+
			"(more than %d MiB): a streamed write holds about part size × concurrency bytes of the body, never the whole of it",
			size>>20, opts.PartSize>>20, opts.Concurrency, grew>>20, bound>>20)
	}
	if gv, err := versionOf(ctx, s.b, k); err != nil || gv != v {
		return fmt.Errorf("Get after the streamed write: %s, version %q (PutStream returned %q)", outcome(err), gv, v)
	}
	return nil
}

var memChecks = []check{{
	name: "stream-memory-bounded",
	expect: "a streamed write of a body of 16 parts grows this process's heap by less than half the body " +
		"(a driver that streams holds about part size × concurrency bytes of it)",
	run: streamMemoryBounded,
}}
