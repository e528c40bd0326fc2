package simulation

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"iter"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing/synctest"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/lease"
)

// The simulated network. Every request, whichever goroutine sends it (the
// simulation's own calls into the lease, or the goroutines the lease starts
// for its probes), blocks in conn.do until the simulation's loop serves it.
// The loop serves requests only when every goroutine of the run is blocked
// (synctest.Wait: the run is a synctest bubble), takes the requests that
// arrived in an order that depends only on their content, and decides each
// one's fate by a hash of the seed and the request's content: so the order
// in which the Go scheduler happened to run the lease's goroutines never
// reaches the run.

// conn is one process incarnation's connection to the store, or the
// operator's: a driver.Bucket that knows its requester, so that faults and
// delays can be decided per instance.
type conn struct {
	s   *sim
	in  *inst // nil for the operator
	inc int
	// stripIfMatch: the path drops If-Match from every PUT (the operator's
	// path in the break-drops-if-match class).
	stripIfMatch bool
}

func (in *inst) conn() *conn { return &conn{s: in.s, in: in, inc: in.inc} }

func (c *conn) Capabilities() driver.Capabilities { return c.s.store.Capabilities() }

// Get reads key; the store's metadata is not modelled (opts.Metadata is
// ignored).
func (c *conn) Get(ctx context.Context, key string, _ driver.GetOptions) (io.ReadCloser, driver.Attrs, error) {
	data, a, err := c.do(ctx, "get", key, nil, driver.Condition{})
	if err != nil {
		return nil, a, err
	}
	return io.NopCloser(bytes.NewReader(data)), a, nil
}

// Put writes key under opts.If; the store's metadata is not modelled
// (opts.Metadata is not sent).
func (c *conn) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	_, a, err := c.do(ctx, "put", key, bytes.Clone(data), opts.If)
	return a, err
}

// PutStream is one Put of the whole body: the simulated service stages no
// parts.
func (c *conn) PutStream(ctx context.Context, key string, r io.Reader, opts driver.PutOptions, s *driver.StreamOptions) (driver.Attrs, error) {
	return driver.PutWhole(ctx, c, key, r, opts, s)
}

func (c *conn) Delete(ctx context.Context, key string, cond driver.Condition) error {
	_, _, err := c.do(ctx, "delete", key, nil, cond)
	return err
}

// List yields one error wrapping driver.ErrUnsupported: the simulated
// service's listing is not modelled, and nothing the simulation runs lists.
func (c *conn) List(_ context.Context, prefix string) iter.Seq2[driver.Object, error] {
	return func(yield func(driver.Object, error) bool) {
		yield(driver.Object{}, &driver.OpError{Driver: "sim", Op: "list", Key: prefix, Kind: driver.ErrUnsupported,
			Err: errors.New("the simulated service cannot list keys")})
	}
}

// errors the simulated network and service return.
var (
	errDropped     = errors.New("connection reset before the request reached the service")
	errReplyLost   = errors.New("timeout: the request was sent but no reply came")
	errServer      = errors.New("503 SlowDown")
	errPartitioned = errors.New("dial tcp: i/o timeout (partitioned)")
	errOver        = errors.New("the simulation is over")
)

type fault int

const (
	fNone fault = iota
	fDrop
	fLostReply
	fLostReplyRefused
	fServerError
	fDelay
	fPartitioned
)

var faultNames = [...]string{"", "request-dropped", "reply-lost", "reply-lost-retry-refused", "server-error", "delayed", "partitioned-request"}

// request is one request in the simulated network.
type request struct {
	c     *conn
	op    string
	key   string
	data  []byte
	cond  driver.Condition // as sent
	eff   driver.Condition // as the service sees it (a path may drop a header)
	ctx   context.Context
	reply chan reply // buffered: the loop never blocks on it
	// slow: the request ignores cancellation and lands when its time comes
	// (a driver that does not honour cancellation once a write has
	// started: the slow-write-outlives-release class). Set by the loop
	// before anything can cancel the request's context.
	slow atomic.Bool
	// under is the lease whose fenced bucket sent this data request.
	under *lease.Lease

	ident    string
	hash     uint64
	order    int // the requester's place in the serving order
	n        int // occurrence of ident within the requester's lease call
	f        fault
	applyAt  time.Duration // when it reaches the service (if it does)
	replyAt  time.Duration // when its answer reaches the client
	applied  bool          // the service has performed it (or refused it)
	noApply  bool          // it never reaches the service
	hangSeen bool          // the hung-renewal shutdown was started for it
	note     string

	out   []byte
	v     driver.Version
	err   error
	st    driver.ServiceTime // what the service's answer said of its clock
	inv   time.Duration      // when it was served (sent)
	lcall int64              // its send time on the history's logical clock
}

type reply struct {
	data []byte
	v    driver.Version
	err  error
	st   driver.ServiceTime // the service's clock, as the answer states it; zero for no answer
}

// hash mixes the identity of a request into 64 bits.
// The bytes hashed are those fmt.Fprint would write; strings, ints and
// uint64s are appended directly because the simulator's hot path hashes
// every request (a campaign of a million seeds spends minutes here).
func hash(parts ...any) uint64 {
	var buf [128]byte
	b, fast := buf[:0], true
	for i, p := range parts {
		switch p := p.(type) {
		case string:
			b = append(b, p...)
			continue
		case int:
			b = strconv.AppendInt(b, int64(p), 10)
		case uint64:
			b = strconv.AppendUint(b, p, 10)
		default:
			fast = false
		}
		// fmt.Fprint puts a space between two operands when neither is a
		// string; leave those calls to fmt.
		if i > 0 {
			if _, ok := parts[i-1].(string); !ok {
				fast = false
			}
		}
		if !fast {
			break
		}
	}
	h := fnv.New64a()
	if fast {
		h.Write(b)
	} else {
		fmt.Fprint(h, parts...)
	}
	x := h.Sum64()
	// splitmix64 finaliser: fnv's low bits are weak.
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// do sends one request through the simulated network and waits for its
// answer, which it returns with the Attrs of a driver's answer: the
// version, and what the answer said of the service's clock (set with an
// error too, where the service answered). It runs on whichever goroutine
// the lease or the simulation sends from; it only queues the request, and
// the loop (serve) does the rest.
func (c *conn) do(ctx context.Context, op, key string, data []byte, cond driver.Condition) ([]byte, driver.Attrs, error) {
	s := c.s
	if err := ctx.Err(); err != nil {
		// A client does not send a request whose context has ended.
		return nil, driver.Attrs{}, &driver.OpError{Driver: "sim", Op: op, Key: key, Cond: cond, Err: err}
	}
	r := &request{c: c, op: op, key: key, data: data, cond: cond, eff: cond, ctx: ctx, reply: make(chan reply, 1)}
	if c.in != nil {
		r.under = c.in.writingUnder
	}
	s.mu.Lock()
	if s.over {
		s.mu.Unlock()
		return nil, driver.Attrs{}, &driver.OpError{Driver: "sim", Op: op, Key: key, Cond: cond, Err: errOver}
	}
	s.pending = append(s.pending, r)
	s.mu.Unlock()
	// Only the loop wakes a request, even one whose context ends (it
	// answers that at once): a goroutine woken by a cancellation would run
	// beside the one that cancelled, and the lease's selects between a
	// free turn and an ended context would choose at random.
	rep := <-r.reply
	return rep.data, driver.Attrs{Version: rep.v, Time: rep.st}, rep.err
}

// scratch reports whether key is a scratch key the lease writes beside the
// LEASE object (a probe on a key of its own, which may carry a random
// name); its name and body are left out of the request's identity, so that
// randomness in them cannot reach the run.
func scratch(key string) bool { return key != leaseKey && strings.HasPrefix(key, leaseKey) }

func displayKey(key string) string {
	if scratch(key) {
		return leaseKey + ".<scratch>"
	}
	return key
}

// settle lets every goroutine of the run reach a blocking point, then
// serves the requests that arrived and performs every network event due
// now, until nothing more happens at this instant.
func (s *sim) settle() {
	wake := true
	for {
		if wake || s.needWait {
			// Only a goroutine that was woken can have sent anything.
			wake, s.needWait = false, false
			synctest.Wait()
			s.pollAsync()
		}
		s.mu.Lock()
		batch := s.pending
		s.pending = nil
		s.mu.Unlock()
		if len(batch) > 0 {
			s.schedule(batch)
		}
		r, applying := s.nextDue()
		if r == nil {
			if len(batch) == 0 {
				return
			}
			continue
		}
		if applying {
			s.applyEvent(r)
		} else {
			s.replyEvent(r)
			wake = true
		}
	}
}

// schedule decides the fate of newly arrived requests, in an order that
// depends only on who sent them and what they are.
func (s *sim) schedule(batch []*request) {
	for _, r := range batch {
		c := r.c
		r.order = 1 << 20 // the operator last
		if c.in != nil {
			r.order = c.in.idx
		}
		body := ""
		if !scratch(r.key) && r.data != nil {
			body = sum(r.data)
		}
		r.ident = r.op + " " + displayKey(r.key) + " " + r.cond.String() + " " + body
	}
	slices.SortFunc(batch, func(a, b *request) int {
		if a.order != b.order {
			return a.order - b.order
		}
		return strings.Compare(a.ident, b.ident)
	})
	for _, r := range batch {
		s.decide(r)
		s.inflight = append(s.inflight, r)
		if in := r.c.in; in != nil && s.now <= in.machineOwner().suspendedUntil {
			s.violate(InvWorld, fmt.Sprintf("%s sent %s %s while its machine is frozen (until t=%v): a simulator bug",
				in, r.op, displayKey(r.key), in.machineOwner().suspendedUntil), true)
		}
	}
}

// decide picks a request's fault and timing.
func (s *sim) decide(r *request) {
	c, in := r.c, r.c.in
	r.inv = s.now
	if s.history != nil && r.key == leaseKey {
		s.history.sent(r)
	}
	r.applyAt, r.replyAt = s.now, s.now
	if in == nil {
		// The operator's path: no faults, but it may drop If-Match.
		if _, ok := r.cond.Match(); ok && c.stripIfMatch && r.op == "put" {
			r.eff = driver.Condition{}
			r.note = " (the path dropped If-Match)"
			s.fault("break-path-dropped-if-match")
		}
		return
	}
	if in.occ == nil {
		in.occ = map[string]int{}
	}
	r.n = in.occ[r.ident]
	in.occ[r.ident] = r.n + 1
	h := hash(s.cfg.Seed, "|", in.idx, "|", c.inc, "|", in.calls, "|", r.ident, "|", r.n)
	r.hash = h
	if r.op == "put" && r.cond == driver.IfAbsent() && s.now < in.dropINMUntil && c.inc == in.inc && (r.key == leaseKey || scratch(r.key)) {
		if !in.dropINMFirstOnly || (in.callKind == "acquire" && in.putsInCall == 0) {
			r.eff = driver.Condition{}
			r.note = " (the path dropped If-None-Match)"
			s.fault("path-dropped-if-none-match")
		}
	}
	if r.op == "put" {
		in.putsInCall++
	}
	f := fNone
	switch u := h % 1000; {
	case in.partitioned:
		f = fPartitioned
	case s.calm || c.inc != in.inc || in.down:
	case u < 15:
		f = fDrop
	case u < 30:
		f = fLostReply
	case u < 40:
		f = fLostReplyRefused
	case u < 55:
		f = fServerError
	case u < 100:
		f = fDelay
	}
	if f != fNone {
		s.fault(faultNames[f])
	}
	r.f = f
	switch f {
	case fDelay:
		unit := s.cfg.Tick
		d1 := time.Duration(h>>16%12) * unit
		d2 := time.Duration(h>>24%12) * unit
		if h>>32%10 == 0 { // now and then a long stall, up to a TTL
			d1 += time.Duration(h>>40%uint64(s.cfg.TTL/unit)) * unit
		}
		r.applyAt, r.replyAt = s.now+d1, s.now+d1+d2
	case fPartitioned:
		r.noApply = true
		r.replyAt = s.now + time.Duration(h>>16%8+1)*s.cfg.Tick // the client's timeout
	case fDrop, fServerError:
		r.noApply = true
	}
	if r.under != nil && r.op != "get" && f == fNone && s.dev&SlowWriteOutlivesRelease != 0 && !s.calm &&
		in.shutdown == nil && !in.leaving && h>>48%300 == 0 {
		in.slowWriteAndShutdown(r)
	}
}

// nextDue returns the network event due now that comes first: a request
// reaching the service (applying true), or an answer reaching its client.
func (s *sim) nextDue() (*request, bool) {
	var best *request
	bestApply := false
	bestAt := time.Duration(0)
	for _, r := range s.inflight {
		at, apply := r.replyAt, false
		switch {
		case r.gaveUp():
			at = s.now // the client stops waiting at once
		case !r.applied && !r.noApply:
			at, apply = r.applyAt, true
		}
		if at > s.now {
			continue
		}
		if best == nil || at < bestAt || (at == bestAt && (apply && !bestApply ||
			apply == bestApply && (r.order < best.order || r.order == best.order && (r.ident < best.ident || r.ident == best.ident && r.n < best.n)))) {
			best, bestApply, bestAt = r, apply, at
		}
	}
	return best, bestApply
}

func (s *sim) remove(r *request) {
	for i, x := range s.inflight {
		if x == r {
			s.inflight = slices.Delete(s.inflight, i, i+1)
			return
		}
	}
}

// gaveUp reports whether r's client has stopped waiting for it: its
// context ended and it honours cancellation.
func (r *request) gaveUp() bool { return r.ctx.Err() != nil && !r.slow.Load() }

// applyEvent: r reaches the service.
func (s *sim) applyEvent(r *request) {
	c := r.c
	in := c.in
	if in != nil && r.f == fDelay && !r.hangSeen && r.op == "put" && r.key == leaseKey && s.dev&ReleaseDuringHungRenewal != 0 &&
		in.callKind == "renew" && r.c.inc == in.inc &&
		in.lease != nil && !in.leaving && in.shutdown == nil && r.hash>>48%3 == 0 {
		if _, match := r.cond.Match(); match && r.applyAt > r.inv {
			r.hangSeen = true
			s.tracef("%s: its %s, sent at t=%v, hangs in the network", in, r.ident, r.inv)
			in.releaseDuringHang()
			return // served again after the shutdown's goroutines ran
		}
	}
	r.applied = true
	if r.under != nil && r.op != "get" {
		if at, ok := s.releasedAt[r.under]; ok {
			s.violate(InvRelease, fmt.Sprintf("%s's %s of %s through Lease.Bucket landed at t=%v, after Release had returned nil at t=%v: a successor may already hold the lease",
				in, r.op, r.key, s.now, at), true)
		}
	}
	s.storeDropped = false
	r.out, r.v, r.st, r.err = c.apply(r.op, r.key, r.data, r.eff)
	if r.err == nil && r.op == "put" && r.key == leaseKey {
		s.checkEpoch(in, r.data, r.eff != r.cond || s.storeDropped)
	}
}

// replyEvent: r's answer reaches its client (unless it gave up).
func (s *sim) replyEvent(r *request) {
	s.remove(r)
	c := r.c
	gave := r.gaveUp()
	switch {
	case gave:
		if !r.applied {
			r.noApply = true
			r.note += " (cancelled before it reached the service)"
		} else {
			r.note += " (cancelled; the client gave up waiting for the answer)"
		}
		r.err = &driver.OpError{Driver: "sim", Op: r.op, Key: r.key, Cond: r.cond, Err: context.Cause(r.ctx)}
	case r.f == fPartitioned:
		r.err = &driver.OpError{Driver: "sim", Op: r.op, Key: r.key, Cond: r.cond, Err: errPartitioned}
	case r.f == fDrop:
		r.err = &driver.OpError{Driver: "sim", Op: r.op, Key: r.key, Cond: r.cond, Err: errDropped}
	case r.f == fServerError:
		r.err = &driver.OpError{Driver: "sim", Op: r.op, Key: r.key, Cond: r.cond, Err: errServer}
	}
	var res string
	if s.cfg.Trace { // the trace's words cost more than the request itself
		res = fmt.Sprintf("-> %s", r.v)
		if r.err != nil {
			res = "-> " + r.err.Error()
		}
	}
	out, v, err, st := r.out, r.v, r.err, r.st
	if gave || r.noApply {
		st = driver.ServiceTime{} // no answer came from the service
	}
	switch f := r.f; {
	case gave:
	case f == fLostReply:
		st = driver.ServiceTime{}
		res += " [reply lost]"
		out, v, err = nil, "", &driver.OpError{Driver: "sim", Op: r.op, Key: r.key, Cond: r.cond, Err: errReplyLost}
	case f == fLostReplyRefused && !r.noApply:
		res += " [reply lost; the retry is refused]"
		kind := driver.ErrPrecondition
		if r.op == "get" {
			kind = nil
		}
		out, v, err = nil, "", &driver.OpError{Driver: "sim", Op: r.op, Key: r.key, Cond: r.cond, Kind: kind, Err: errReplyLost}
		// The client's retry was answered now: a refusal of a write, with
		// the service's date; a Get's retry is not modelled as answered.
		st = driver.ServiceTime{}
		if kind != nil {
			st = driver.ServiceTime{Date: s.serviceNow(), Resolution: s.store.Resolution}
		}
	case f == fDelay:
		res += fmt.Sprintf(" [delayed %v + %v]", r.applyAt-r.inv, r.replyAt-r.applyAt)
	}
	if r.slow.Load() {
		res += " [slow: ignored cancellation]"
	}
	if s.history != nil && r.key == leaseKey {
		s.history.answered(r, gave)
	}
	if s.cfg.Trace {
		who := "operator"
		if c.in != nil {
			who = c.in.String()
		}
		s.tracef("  %s %s %s %s%s %s", who, r.op, displayKey(r.key), condString(r.cond), r.note, res)
	}
	if s.cfg.NoServiceTime {
		st = driver.ServiceTime{}
	}
	if !st.Date.IsZero() {
		s.res.ServiceTimes++
	}
	r.reply <- reply{out, v, err, st}
}

// serviceNow is the service's clock now: true time, truncated to its
// resolution.
func (s *sim) serviceNow() time.Time { return t0.Add(s.now).Truncate(s.store.Resolution) }

func condString(c driver.Condition) string {
	if c == (driver.Condition{}) {
		return "unconditional"
	}
	return c.String()
}

// apply performs the request on the store, the one place where the store's
// state changes, and checks the data invariants on every write that lands.
// It returns what the store's answer said of its clock.
func (c *conn) apply(op, key string, data []byte, cond driver.Condition) ([]byte, driver.Version, driver.ServiceTime, error) {
	out, a, err := c.applyAttrs(context.Background(), op, key, data, cond)
	return out, a.Version, a.Time, err
}

// applyAttrs is apply, returning the store's Attrs: its version, and what
// its answer said of its clock (a delete's says nothing).
func (c *conn) applyAttrs(ctx context.Context, op, key string, data []byte, cond driver.Condition) ([]byte, driver.Attrs, error) {
	s := c.s
	if s.cfg.Store == IgnoresDataPreconditions && key != leaseKey && !scratch(key) {
		cond = driver.Condition{}
	}
	_, match := cond.Match()
	missing := false
	if match && op != "get" {
		_, _, err := readAll(s, key)
		missing = errors.Is(err, driver.ErrNotExist)
	}
	switch {
	case op == "delete" && match && s.dev&StoreIgnoresDeleteCondition != 0:
		s.fault("store-ignored-delete-condition")
		cond = driver.Condition{}
	case op == "delete" && match && missing && s.dev&StoreDeletesMissingOK != 0:
		s.fault("store-deleted-missing-ok")
		return nil, driver.Attrs{}, nil
	case op == "put" && match && missing && s.dev&StoreIfMatchMissingCreates != 0:
		s.fault("store-if-match-missing-created")
		s.storeDropped = true
		cond = driver.Condition{}
	}
	switch op {
	case "get":
		return readAllAttrs(ctx, s, key)
	case "put":
		a, err := s.store.Put(ctx, key, data, driver.PutOptions{If: cond})
		if err == nil && key == leaseKey && c.in != nil {
			s.leaseWriters[a.Version] = writer{c.in, c.inc}
		}
		if err == nil && key != leaseKey && !scratch(key) {
			s.dirty = true
			s.landed(c.in, key, data)
		}
		return nil, a, err
	default:
		err := s.store.Delete(ctx, key, cond)
		if err == nil && key != leaseKey && !scratch(key) {
			s.dirty = true
			delete(s.written, key)
		}
		return nil, driver.Attrs{}, err
	}
}

func readAll(s *sim, key string) ([]byte, driver.Version, error) {
	data, a, err := readAllAttrs(context.Background(), s, key)
	return data, a.Version, err
}

// readAllAttrs reads key from the store, and returns its Attrs: the
// version, and what the store's answer said of its clock (set for a
// missing key too).
func readAllAttrs(ctx context.Context, s *sim, key string) ([]byte, driver.Attrs, error) {
	rc, a, err := s.store.Get(ctx, key, driver.GetOptions{})
	if err != nil {
		return nil, driver.Attrs{Time: a.Time}, err
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	return data, driver.Attrs{Version: a.Version, Time: a.Time}, err
}
