package simulation

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"strconv"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
)

// conn is one process incarnation's connection to the store: a
// driver.Bucket that knows its requester, so that faults and delays can be
// decided per instance.
type conn struct {
	in  *inst
	inc int
}

func (in *inst) conn() *conn { return &conn{in: in, inc: in.inc} }

func (c *conn) Capabilities() driver.Capabilities { return c.in.s.store.Capabilities() }

func (c *conn) Get(ctx context.Context, key string) (io.ReadCloser, driver.Version, error) {
	data, v, err := c.do(ctx, "get", key, nil, driver.Condition{})
	if err != nil {
		return nil, "", err
	}
	return io.NopCloser(bytes.NewReader(data)), v, nil
}

func (c *conn) Put(ctx context.Context, key string, data []byte, cond driver.Condition) (driver.Version, error) {
	_, v, err := c.do(ctx, "put", key, data, cond)
	return v, err
}

func (c *conn) Delete(ctx context.Context, key string, cond driver.Condition) error {
	_, _, err := c.do(ctx, "delete", key, nil, cond)
	return err
}

// errors the simulated network and service return.
var (
	errDropped     = errors.New("connection reset before the request reached the service")
	errReplyLost   = errors.New("timeout: the request was sent but no reply came")
	errServer      = errors.New("503 SlowDown")
	errPartitioned = errors.New("dial tcp: i/o timeout (partitioned)")
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

// do sends one request through the simulated network.
func (c *conn) do(ctx context.Context, op, key string, data []byte, cond driver.Condition) ([]byte, driver.Version, error) {
	in, s := c.in, c.in.s
	// Only the simulation's goroutine may let time pass; finding out which
	// goroutine this is costs a stack trace, so it is done only when needed.
	main := -1
	onMain := func() bool {
		if main < 0 {
			main = 0
			if goid() == s.mainG {
				main = 1
			}
		}
		return main == 1
	}
	ident := op + " " + key + " " + cond.String()
	s.mu.Lock()
	if in.occ == nil {
		in.occ = map[string]int{}
	}
	n := in.occ[ident]
	in.occ[ident] = n + 1
	call := in.call
	s.mu.Unlock()
	h := hash(s.cfg.Seed, "|", in.idx, "|", c.inc, "|", call, "|", ident, "|", n)

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
	case u < 100 && onMain():
		f = fDelay
	}
	if f != fNone {
		s.fault(faultNames[f])
	}
	var d1, d2 time.Duration
	if f == fDelay {
		unit := s.cfg.Tick
		d1 = time.Duration(h>>16%12) * unit
		d2 = time.Duration(h>>24%12) * unit
		if h>>32%10 == 0 { // now and then a long stall, up to a TTL
			d1 += time.Duration(h>>40%uint64(s.cfg.TTL/unit)) * unit
		}
	}
	if f == fPartitioned && onMain() {
		d1 = time.Duration(h>>16%8+1) * s.cfg.Tick // the client's timeout
	}

	var (
		out  []byte
		v    driver.Version
		err  error
		note string
	)
	if d1 > 0 {
		s.advance(d1)
		if _, match := cond.Match(); f == fDelay && op == "put" && key == leaseKey && match &&
			s.dev&ReleaseDuringHungRenewal != 0 && in.lease != nil && !in.leaving && h>>48%3 == 0 {
			in.releaseDuringHang()
		}
	}
	switch {
	case f == fPartitioned:
		err = &driver.OpError{Driver: "sim", Op: op, Key: key, Cond: cond, Err: errPartitioned}
	case f == fDrop:
		err = &driver.OpError{Driver: "sim", Op: op, Key: key, Cond: cond, Err: errDropped}
	case f == fServerError:
		err = &driver.OpError{Driver: "sim", Op: op, Key: key, Cond: cond, Err: errServer}
	case ctx.Err() != nil:
		err = &driver.OpError{Driver: "sim", Op: op, Key: key, Cond: cond, Err: ctx.Err()}
		note = " (cancelled before it reached the service)"
	default:
		out, v, err = c.apply(op, key, data, cond)
	}
	if d2 > 0 {
		s.advance(d2)
	}
	var res string
	if s.cfg.Trace { // the trace's words cost more than the request itself
		res = fmt.Sprintf("-> %s", v)
		if err != nil {
			res = "-> " + err.Error()
		}
	}
	switch f {
	case fLostReply:
		res += " [reply lost]"
		out, v, err = nil, "", &driver.OpError{Driver: "sim", Op: op, Key: key, Cond: cond, Err: errReplyLost}
	case fLostReplyRefused:
		res += " [reply lost; the retry is refused]"
		kind := driver.ErrPrecondition
		if op == "get" {
			kind = nil
		}
		out, v, err = nil, "", &driver.OpError{Driver: "sim", Op: op, Key: key, Cond: cond, Kind: kind, Err: errReplyLost}
	case fDelay:
		res += fmt.Sprintf(" [delayed %v + %v]", d1, d2)
	}
	if !s.cfg.Trace {
		return out, v, err
	}
	line := fmt.Sprintf("%s %s %s %s%s", in, op, key, condString(cond), note)
	if onMain() {
		s.tracef("  %s %s", line, res)
	} else {
		s.mu.Lock()
		in.gbuf = append(in.gbuf, fmt.Sprintf("  %s %s (from a lease goroutine)", line, res))
		s.mu.Unlock()
	}
	return out, v, err
}

func condString(c driver.Condition) string {
	if c.Unconditional() {
		return "unconditional"
	}
	return c.String()
}

// apply performs the request on the store, the one place where the store's
// state changes, and checks the data invariants on every write that lands.
func (c *conn) apply(op, key string, data []byte, cond driver.Condition) ([]byte, driver.Version, error) {
	s := c.in.s
	if s.cfg.Store == IgnoresDataPreconditions && key != leaseKey {
		cond = driver.Condition{}
	}
	ctx := context.Background()
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
		return nil, "", nil
	case op == "put" && match && missing && s.dev&StoreIfMatchMissingCreates != 0:
		s.fault("store-if-match-missing-created")
		cond = driver.Condition{}
	}
	switch op {
	case "get":
		return readAll(s, key)
	case "put":
		v, err := s.store.Put(ctx, key, data, cond)
		if err == nil && key == leaseKey {
			// Lease goroutines write the LEASE object too.
			s.mu.Lock()
			s.leaseWriters[v] = c.in
			s.mu.Unlock()
		}
		if err == nil && key != leaseKey {
			// Only the worker writes other keys, from the simulation's
			// goroutine.
			s.dirty = true
			s.landed(c.in, key, data)
		}
		return nil, v, err
	default:
		err := s.store.Delete(ctx, key, cond)
		if err == nil && key != leaseKey {
			s.dirty = true
		}
		return nil, "", err
	}
}

func readAll(s *sim, key string) ([]byte, driver.Version, error) {
	rc, v, err := s.store.Get(context.Background(), key)
	if err != nil {
		return nil, "", err
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	return data, v, err
}
