//go:build linux

package chaos

import (
	"bufio"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// echo serves on loopback: each line it reads it counts and sends back.
func echo(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var got atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					got.Add(1)
					if _, err := io.WriteString(c, line); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String(), &got
}

func roundTrip(addr string, timeout time.Duration) (string, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	if _, err := io.WriteString(c, "ping\n"); err != nil {
		return "", err
	}
	return bufio.NewReader(c).ReadString('\n')
}

func TestProxyFaults(t *testing.T) {
	up, got := echo(t)
	p, err := StartProxy(up)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if !strings.HasPrefix(p.Addr(), "127.0.0.1:") {
		t.Fatalf("proxy listens on %s", p.Addr())
	}
	if s, err := roundTrip(p.Addr(), 5*time.Second); err != nil || s != "ping\n" {
		t.Fatalf("healthy: %q, %v", s, err)
	}

	p.Partition(true)
	before := got.Load()
	if _, err := roundTrip(p.Addr(), 300*time.Millisecond); err == nil {
		t.Error("a request crossed a partition")
	}
	if got.Load() != before {
		t.Error("the server saw a request through a partition")
	}
	p.Partition(false)

	p.DropReplies(true)
	before = got.Load()
	if s, err := roundTrip(p.Addr(), 5*time.Second); err == nil {
		t.Errorf("a reply came back while replies are dropped: %q", s)
	}
	if got.Load() != before+1 {
		t.Error("with replies dropped, the request did not reach the server")
	}
	p.DropReplies(false)

	p.SetDelay(100 * time.Millisecond)
	start := time.Now()
	if _, err := roundTrip(p.Addr(), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("a delayed round trip took %v, less than the two delays", d)
	}
	p.Heal()
	if s, err := roundTrip(p.Addr(), 5*time.Second); err != nil || s != "ping\n" {
		t.Fatalf("healed: %q, %v", s, err)
	}
}

func TestProxyRefusesNonLoopback(t *testing.T) {
	if _, err := StartProxy("192.0.2.1:80"); err == nil {
		t.Fatal("a proxy to a non-loopback address started")
	}
}
