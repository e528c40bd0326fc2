package simulation

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"testing/synctest"
	"time"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/lease"
)

// asyncCall is a call into the lease running on a goroutine of its own.
// Every call runs so (the simulation's loop serves its requests meanwhile);
// most are waited for at once (inst.call), some run beside a request that
// hangs (a shutdown: their onDone runs when the loop sees them return).
type asyncCall struct {
	in      *inst
	what    string
	done    chan struct{}
	err     error
	panic   any
	started time.Duration
	// atOnce: the call must return before the network serves anything
	// more (Release with an expired context).
	atOnce   bool
	onDone   func(*asyncCall)
	finished bool
}

// start runs f on a goroutine of its own; for a call with an onDone, the
// loop polls for its return.
func (s *sim) start(in *inst, what string, f func() error) *asyncCall {
	a := &asyncCall{in: in, what: what, done: make(chan struct{}), started: s.now}
	go func() {
		defer close(a.done)
		defer func() {
			if p := recover(); p != nil {
				a.panic = fmt.Sprintf("%v\n%s", p, debug.Stack())
			}
		}()
		a.err = f()
	}()
	s.needWait = true
	s.async = append(s.async, a)
	return a
}

// pollAsync notes the calls that have returned. It runs right after a
// synctest.Wait, when no goroutine of the run is running.
func (s *sim) pollAsync() {
	for i := 0; i < len(s.async); i++ {
		a := s.async[i]
		select {
		case <-a.done:
		default:
			continue
		}
		s.async = slices.Delete(s.async, i, i+1)
		i--
		a.finished = true
		if a.panic != nil {
			s.violate(InvPanic, fmt.Sprintf("%s panicked: %v", a.what, a.panic), true)
		}
		if a.onDone != nil {
			a.onDone(a)
		}
	}
	for _, a := range s.async {
		if a.atOnce {
			s.violate(InvRelease, fmt.Sprintf("%s: %s did not return at once; MayWrite %v", a.in, a.what, a.in.lease != nil && a.in.lease.MayWrite()), true)
		}
	}
}

// call runs f, a call into the lease, on a goroutine of its own and serves
// its requests (letting simulated time pass while they are delayed) until
// it returns.
func (in *inst) call(kind string, f func()) {
	s := in.s
	in.calls++
	in.callKind, in.putsInCall = kind, 0
	in.occ = nil
	in.busy = true
	a := s.start(in, kind, func() error { f(); return nil })
	ok := s.drive(a.done, s.cfg.hangLimit())
	in.busy = false
	if !ok {
		s.violate(InvHang, fmt.Sprintf("%s: %s did not return within %v of simulated time", in, kind, s.cfg.hangLimit()), true)
	}
	s.pollAsync()
}

// drive serves the network, and lets time pass, until done is closed or
// limit has passed; it reports whether done was closed.
func (s *sim) drive(done <-chan struct{}, limit time.Duration) bool {
	start := s.now
	for {
		s.settle()
		select {
		case <-done:
			return true
		default:
		}
		if s.now-start >= limit {
			return false
		}
		s.tick()
	}
}

// end finishes the run: every request still in the network fails at once,
// and every goroutine of the run returns, so that the bubble ends.
func (s *sim) end() {
	s.mu.Lock()
	s.over = true
	pending := s.pending
	s.pending = nil
	s.mu.Unlock()
	if s.history != nil {
		s.history.unanswered(s.inflight)
		s.res.LeaseOps = s.history.ops
	}
	for _, r := range append(s.inflight, pending...) {
		r.slow.Store(false)
		r.reply <- reply{err: &driver.OpError{Driver: "sim", Op: r.op, Key: r.key, Cond: r.cond, Err: errOver}}
	}
	s.inflight = nil
	synctest.Wait()
}

// operator is a person with the bucketlease command who, in the
// break-drops-if-match class, looks at the lease when its holder is dead
// and breaks that version later, through a path that drops If-Match.
type operator struct {
	v       driver.Version
	breakAt time.Duration
	busy    bool
}

func (o *operator) chaos(s *sim) {
	if s.dev&BreakDropsIfMatch == 0 || o.busy {
		return
	}
	if o.v == "" {
		if s.rng.Float64() >= 0.01 {
			return
		}
		_, v, err := readAll(s, leaseKey)
		if err != nil {
			return
		}
		w := s.leaseWriters[v]
		if w.in == nil || !(w.in.down || w.in.gone || w.in.inc != w.inc) {
			return // its holder may be alive: an operator breaks only a dead holder's lease
		}
		o.v, o.breakAt = v, s.now+s.randDur(s.cfg.TTL)
		s.tracef("operator: looks at the lease, version %s, whose holder %s is dead; will break it in %v", v, w.in, o.breakAt-s.now)
		return
	}
	if s.now < o.breakAt {
		return
	}
	v := o.v
	o.v = ""
	s.fault("break-drops-if-match")
	c := &conn{s: s, stripIfMatch: true}
	now := t0.Add(s.now)
	o.busy = true
	a := s.start(nil, "Break", func() error { return lease.Break(context.Background(), bucket.New(c, prefix), v, now, false) })
	ok := s.drive(a.done, s.cfg.hangLimit())
	o.busy = false
	if !ok {
		s.violate(InvHang, fmt.Sprintf("operator: Break did not return within %v", s.cfg.hangLimit()), true)
	}
	s.pollAsync()
	s.tracef("operator: Break of version %s, through a path that drops If-Match: %v", v, a.err)
}
