package bench

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Link is a loopback TCP proxy that carries at most a given number of
// bytes a second in each direction, shared by all its connections, and
// may delay every byte by a fixed time each way: one slow or distant link
// between a process and its object store. lab/chaos's proxy injects faults
// but does not shape traffic, hence this one.
//
// Each direction is a reservation clock, shared by every connection: a
// pump that has read a chunk (at most linkChunk bytes) reserves the
// chunk's transmission time after every reservation made before it, sleeps
// until that time, and writes the chunk. So the link is a first-come,
// first-served queue that holds at most one chunk per connection and
// direction: a small request on a connection of its own waits for at most
// one chunk of every busy connection, as on a link with a short queue and
// fair flows. (A link whose buffer holds seconds of data, bufferbloat, is
// not modelled.)
type Link struct {
	ln       net.Listener
	upstream string
	up, down *clock
	delay    time.Duration // one way

	opened atomic.Int64 // connections accepted

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// linkChunk is the most a pump reads, reserves and writes at once.
const linkChunk = 16 << 10

// clock is one direction of a Link: the time at which the link is next
// free, and the bytes it carried.
type clock struct {
	rate  float64 // bytes a second; 0 is unlimited
	mu    sync.Mutex
	free  time.Time
	bytes atomic.Int64
}

// reserve books n bytes on the link and returns how long to wait before
// sending them.
func (c *clock) reserve(n int) time.Duration {
	if c.rate == 0 {
		c.bytes.Add(int64(n))
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	if c.free.Before(now) {
		c.free = now
	}
	c.free = c.free.Add(time.Duration(float64(n) / c.rate * float64(time.Second)))
	c.bytes.Add(int64(n))
	return c.free.Sub(now)
}

// StartLink listens on a free port of 127.0.0.1 and forwards each
// connection to upstream (a loopback host:port), carrying at most rate
// bytes a second each way.
func StartLink(upstream string, rate int64) (*Link, error) {
	if rate <= 0 {
		return nil, fmt.Errorf("link rate %d: want bytes a second > 0", rate)
	}
	return startLink(upstream, float64(rate), 0)
}

// StartDelayLink listens on a free port of 127.0.0.1 and forwards each
// connection to upstream (a loopback host:port) without a rate limit,
// delivering every byte delay after the link read it, in each direction:
// a round trip through it takes at least twice delay more than without.
func StartDelayLink(upstream string, delay time.Duration) (*Link, error) {
	if delay <= 0 {
		return nil, fmt.Errorf("link delay %v: want > 0", delay)
	}
	return startLink(upstream, 0, delay)
}

func startLink(upstream string, rate float64, delay time.Duration) (*Link, error) {
	host, _, err := net.SplitHostPort(upstream)
	if err != nil {
		return nil, err
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("link upstream %s is not on loopback", upstream)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	l := &Link{ln: ln, upstream: upstream, up: &clock{rate: rate}, down: &clock{rate: rate},
		delay: delay, conns: map[net.Conn]struct{}{}}
	l.wg.Add(1)
	go l.serve()
	return l, nil
}

// Addr is the host:port to dial instead of the upstream.
func (l *Link) Addr() string { return l.ln.Addr().String() }

// Carried returns the bytes the link has carried towards the upstream
// (requests) and back (replies).
func (l *Link) Carried() (up, down int64) { return l.up.bytes.Load(), l.down.bytes.Load() }

// Opened returns the number of connections the link has accepted.
func (l *Link) Opened() int64 { return l.opened.Load() }

func (l *Link) serve() {
	defer l.wg.Done()
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		l.opened.Add(1)
		s, err := net.Dial("tcp", l.upstream)
		if err != nil {
			c.Close()
			continue
		}
		if !l.track(c, s) {
			c.Close()
			s.Close()
			return
		}
		l.wg.Add(2)
		if l.delay > 0 {
			go l.delayPump(c, s, l.up)
			go l.delayPump(s, c, l.down)
		} else {
			go l.pump(c, s, l.up)
			go l.pump(s, c, l.down)
		}
	}
}

// track notes an open pair of connections; false once the link is closed.
func (l *Link) track(cs ...net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	for _, c := range cs {
		l.conns[c] = struct{}{}
	}
	return true
}

// pump copies src to dst through the direction's clock, then closes both
// connections (so the pump of the other direction ends too).
func (l *Link) pump(src, dst net.Conn, c *clock) {
	defer l.wg.Done()
	defer func() {
		src.Close()
		dst.Close()
		l.mu.Lock()
		delete(l.conns, src)
		delete(l.conns, dst)
		l.mu.Unlock()
	}()
	buf := make([]byte, linkChunk)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if d := c.reserve(n); d > 0 {
				time.Sleep(d)
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF or a closed connection: HTTP never half-closes
		}
	}
}

// delayPump copies src to dst, each chunk written l.delay after it was
// read, while later chunks are read on: a link whose latency does not
// limit its throughput. It closes both connections when either side ends.
func (l *Link) delayPump(src, dst net.Conn, c *clock) {
	defer l.wg.Done()
	type chunk struct {
		data []byte
		due  time.Time
	}
	inflight := make(chan chunk, 256)
	go func() {
		defer close(inflight)
		for {
			buf := make([]byte, linkChunk)
			n, err := src.Read(buf)
			if n > 0 {
				c.reserve(n)
				inflight <- chunk{buf[:n], time.Now().Add(l.delay)}
			}
			if err != nil {
				return
			}
		}
	}()
	defer func() {
		src.Close()
		dst.Close()
		for range inflight {
		}
		l.mu.Lock()
		delete(l.conns, src)
		delete(l.conns, dst)
		l.mu.Unlock()
	}()
	for ch := range inflight {
		time.Sleep(time.Until(ch.due))
		if _, err := dst.Write(ch.data); err != nil {
			return
		}
	}
}

// Close stops accepting, closes every connection and waits for the pumps.
func (l *Link) Close() error {
	l.mu.Lock()
	l.closed = true
	for c := range l.conns {
		c.Close()
	}
	l.mu.Unlock()
	err := l.ln.Close()
	l.wg.Wait()
	return err
}
