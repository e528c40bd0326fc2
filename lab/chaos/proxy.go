//go:build linux

package chaos

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy forwards TCP connections from a port of 127.0.0.1 to an upstream
// address, one proxy per worker, and does to them what the nemesis says:
// partition (every connection cut, new ones held without a byte until the
// partition heals, then cut), delay (each chunk, each direction), drop
// replies (a request reaches the server, and the connection is reset when
// the answer comes back) and reset (every open connection, at once).
type Proxy struct {
	ln       net.Listener
	upstream string

	delay atomic.Int64 // per chunk, each direction, in nanoseconds
	drop  atomic.Bool
	conns atomic.Int64 // connections accepted

	mu          sync.Mutex
	pairs       map[*pair]struct{}
	partitioned bool
	healed      chan struct{} // closed when the current partition heals
	closed      bool
	wg          sync.WaitGroup
}

type pair struct {
	client, server net.Conn
	once           sync.Once
	done           chan struct{}
}

// close ends both connections; with reset, the client gets an RST.
func (p *pair) close(reset bool) {
	p.once.Do(func() {
		if reset {
			if tc, ok := p.client.(*net.TCPConn); ok {
				_ = tc.SetLinger(0)
			}
		}
		p.client.Close()
		if p.server != nil {
			p.server.Close()
		}
		close(p.done)
	})
}

// StartProxy listens on a free port of 127.0.0.1 and forwards to upstream,
// which must be a loopback host:port.
func StartProxy(upstream string) (*Proxy, error) {
	host, _, err := net.SplitHostPort(upstream)
	if err != nil {
		return nil, fmt.Errorf("proxy: upstream %q: %w", upstream, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("proxy: upstream %q is not on loopback", upstream)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("proxy: listen: %w", err)
	}
	p := &Proxy{ln: ln, upstream: upstream, pairs: map[*pair]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

// Addr returns the proxy's "127.0.0.1:PORT".
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Connections returns how many connections the proxy has accepted.
func (p *Proxy) Connections() int64 { return p.conns.Load() }

func (p *Proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		p.conns.Add(1)
		p.wg.Add(1)
		go p.handle(c)
	}
}

func (p *Proxy) handle(c net.Conn) {
	defer p.wg.Done()
	pr := &pair{client: c, done: make(chan struct{})}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		c.Close()
		return
	}
	p.pairs[pr] = struct{}{}
	held := p.healed
	partitioned := p.partitioned
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.pairs, pr)
		p.mu.Unlock()
		pr.close(false)
	}()
	if partitioned {
		// Not a byte passes; the client waits, as behind a black hole,
		// until the partition heals, and then the connection is cut.
		select {
		case <-held:
		case <-pr.done:
		}
		return
	}
	s, err := net.DialTimeout("tcp", p.upstream, 5*time.Second)
	if err != nil {
		return
	}
	p.mu.Lock()
	pr.server = s
	p.mu.Unlock()
	select {
	case <-pr.done: // cut while dialling
		s.Close()
		return
	default:
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.pump(pr, c, s, false) }()
	go func() { defer wg.Done(); p.pump(pr, s, c, true) }()
	wg.Wait()
}

// pump copies src to dst; reply is true for the server-to-client direction.
func (p *Proxy) pump(pr *pair, src, dst net.Conn, reply bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if d := time.Duration(p.delay.Load()); d > 0 {
				t := time.NewTimer(d)
				select {
				case <-t.C:
				case <-pr.done:
					t.Stop()
					return
				}
			}
			if reply && p.drop.Load() {
				// The request reached the server and was answered;
				// the answer is lost.
				pr.close(true)
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				pr.close(false)
				return
			}
		}
		if err != nil {
			pr.close(false)
			return
		}
	}
}

// Partition cuts (on) or restores (off) the worker's network: while on,
// every open connection is reset and new ones get no byte through.
func (p *Proxy) Partition(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if on == p.partitioned {
		return
	}
	p.partitioned = on
	if on {
		p.healed = make(chan struct{})
		for pr := range p.pairs {
			pr.close(true)
		}
		return
	}
	close(p.healed)
}

// SetDelay delays every chunk by d in each direction (0: no delay).
func (p *Proxy) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

// DropReplies makes the proxy forward requests and reset the connection
// when the answer arrives, instead of passing it on.
func (p *Proxy) DropReplies(on bool) { p.drop.Store(on) }

// Reset resets every open connection.
func (p *Proxy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for pr := range p.pairs {
		pr.close(true)
	}
}

// Heal ends every fault: no partition, no delay, no dropped replies.
func (p *Proxy) Heal() {
	p.SetDelay(0)
	p.DropReplies(false)
	p.Partition(false)
}

// Close stops the proxy and every connection through it, and waits for
// its goroutines.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for pr := range p.pairs {
		pr.close(false)
	}
	if p.partitioned {
		p.partitioned = false
		close(p.healed)
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}
