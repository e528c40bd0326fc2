//go:build linux

package chaos

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"sync"
	"sync/atomic"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/lab/chaos/register"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// The history of the LEASE object: every request a worker's lease sends to
// its LEASE key is logged twice, as it is handed to the driver (EvLeaseCall)
// and as the driver answers (EvLeaseReturn), on the shared system clock, so
// that the checker can test the history for linearizability against a
// compare-and-swap register (register.Check, with Porcupine). A request
// whose answer was never logged (its process was killed) has an unknown
// outcome.

// Events of the LEASE object's history.
const (
	EvLeaseCall   = "lease-call"
	EvLeaseReturn = "lease-return"
)

// recorder is a driver.Bucket that logs every request on key.
type recorder struct {
	driver.Bucket
	key string
	log func(Entry)
	seq *atomic.Int64
}

func digest(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:8])
}

func condEntry(cond driver.Condition) (kind, ver string) {
	if v, ok := cond.Match(); ok {
		return register.Match, string(v)
	}
	if cond == driver.IfAbsent() {
		return register.Absent, ""
	}
	return register.None, ""
}

// status classifies a driver's answer for the history.
func status(err error) string {
	switch {
	case err == nil:
		return register.OK
	case errors.Is(err, driver.ErrPrecondition):
		return register.Refused
	case errors.Is(err, driver.ErrNotExist):
		return register.NotFound
	}
	return register.Unknown
}

func (r recorder) call(op string, cond driver.Condition, body []byte) int64 {
	n := r.seq.Add(1)
	kind, ver := condEntry(cond)
	e := Entry{Ev: EvLeaseCall, Seq: n, Op: op, Key: r.key, Match: kind, Ver: ver}
	if body != nil {
		e.Body = digest(body)
		if rec, err := admin.DecodeRecord(body); err == nil && op == register.Put {
			e.Eras = admin.Status{Record: &rec}.Eras()
		}
	}
	r.log(e)
	return n
}

func (r recorder) ret(n int64, op string, v driver.Version, body []byte, err error) {
	e := Entry{Ev: EvLeaseReturn, Seq: n, Op: op, Key: r.key, Ver: string(v), Status: status(err)}
	if body != nil {
		e.Body = digest(body)
	}
	if err != nil {
		e.Err = err.Error()
	}
	r.log(e)
}

func (r recorder) Get(ctx context.Context, key string, opts driver.GetOptions) (io.ReadCloser, driver.Attrs, error) {
	if key != r.key {
		return r.Bucket.Get(ctx, key, opts)
	}
	n := r.call(register.Get, driver.Condition{}, nil)
	rc, a, err := r.Bucket.Get(ctx, key, opts)
	if err != nil {
		r.ret(n, register.Get, "", nil, err)
		return nil, a, err
	}
	// A LEASE object is small; read it whole, to log what was read.
	data, rerr := io.ReadAll(io.LimitReader(rc, 1<<20))
	rc.Close()
	if rerr != nil {
		r.ret(n, register.Get, "", nil, rerr)
		return nil, driver.Attrs{Time: a.Time}, rerr
	}
	r.ret(n, register.Get, a.Version, data, nil)
	return io.NopCloser(bytes.NewReader(data)), a, nil
}

func (r recorder) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	if key != r.key {
		return r.Bucket.Put(ctx, key, data, opts)
	}
	n := r.call(register.Put, opts.If, data)
	a, err := r.Bucket.Put(ctx, key, data, opts)
	r.ret(n, register.Put, a.Version, nil, err)
	return a, err
}

// PutStream passes a streamed write on (the lease streams no LEASE
// object), so that the fenced bucket streams through to the driver. It
// logs, for the checker, each request of a data key's upload as the driver
// asks whether it may start it (EvStreamReq), before the gate above it (the
// lease's fence, which Lease.Bucket puts in opts.MayStart) is asked: a
// request whose line was logged after a successor's acquire returned passed
// a fence check no correct lease passes. The last such line of a committed
// upload is its commit's. The lease's own streamed writes on scratch keys
// (the stream probe's) are logged as they start and end (EvScratchStart,
// EvScratchEnd), so that an upload one leaves pending can be told from
// one nobody logged.
func (r recorder) PutStream(ctx context.Context, key string, rd io.Reader, po driver.PutOptions, opts *driver.StreamOptions) (driver.Attrs, error) {
	cond := po.If
	if key == r.key {
		data, err := io.ReadAll(rd)
		if err != nil {
			return driver.Attrs{}, err
		}
		return r.Put(ctx, key, data, po)
	}
	if admin.IsScratchKey(key) {
		r.log(Entry{Ev: EvScratchStart, Key: key, Cond: cond.String()})
		a, err := r.Bucket.PutStream(ctx, key, rd, po, opts)
		e := Entry{Ev: EvScratchEnd, Key: key, Cond: cond.String(), OK: err == nil, Ver: string(a.Version)}
		if err != nil {
			e.Err = err.Error()
		}
		r.log(e)
		return a, err
	}
	o := driver.StreamOptions{}
	if opts != nil {
		o = *opts
	}
	gate, n := o.MayStart, 0
	o.MayStart = func() error {
		n++
		r.log(Entry{Ev: EvStreamReq, Key: key, Seq: int64(n)})
		if gate == nil {
			return nil
		}
		err := gate()
		if err != nil {
			r.log(Entry{Ev: EvStreamReq, Key: key, Seq: int64(n), Refused: true, Err: err.Error()})
		}
		return err
	}
	return r.Bucket.PutStream(ctx, key, rd, po, &o)
}

func (r recorder) Delete(ctx context.Context, key string, cond driver.Condition) error {
	if key != r.key {
		return r.Bucket.Delete(ctx, key, cond)
	}
	n := r.call(register.Delete, cond, nil)
	err := r.Bucket.Delete(ctx, key, cond)
	r.ret(n, register.Delete, "", nil, err)
	return err
}

// liar is the lie-refusal negative control's driver wrapper: the first
// refused If-None-Match PUT of key (the acquire probe's, on a lease of
// ours) is reported as a success, with a made-up version.
type liar struct {
	driver.Bucket
	key  string
	once *sync.Once
}

// Put lies about the first refused If-None-Match Put of the lease's key;
// a streamed write passes on untouched (the embedded PutStream): the lie
// is about the LEASE object only.
func (l liar) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	a, err := l.Bucket.Put(ctx, key, data, opts)
	if key == l.key && opts.If == driver.IfAbsent() && errors.Is(err, driver.ErrPrecondition) {
		lied := false
		l.once.Do(func() { lied = true })
		if lied {
			return driver.Attrs{Version: driver.Version("lie-" + digest(data)), Time: a.Time}, nil
		}
	}
	return a, err
}

// leaseOps turns the LEASE history in a run's logs into register
// operations, one list per label. A call without a return is Unknown.
func leaseOps(entries []Entry) map[string][]register.Op {
	type k struct {
		proc, label string
		seq         int64
	}
	clients := map[string]int{}
	open := map[k]int{} // index into ops[label]
	ops := map[string][]register.Op{}
	for _, e := range entries {
		switch e.Ev {
		case EvLeaseCall:
			c, ok := clients[e.Proc]
			if !ok {
				c = len(clients)
				clients[e.Proc] = c
			}
			op := register.Op{Client: c, Kind: e.Op, Cond: e.Match, Ver: e.Ver, Body: e.Body, Call: e.T, Status: register.Unknown,
				Note: e.Proc}
			open[k{e.Proc, e.Prefix, e.Seq}] = len(ops[e.Prefix])
			ops[e.Prefix] = append(ops[e.Prefix], op)
		case EvLeaseReturn:
			i, ok := open[k{e.Proc, e.Prefix, e.Seq}]
			if !ok {
				continue
			}
			delete(open, k{e.Proc, e.Prefix, e.Seq})
			op := &ops[e.Prefix][i]
			op.Return, op.Status, op.OutVer = e.T, e.Status, e.Ver
			if e.Op == register.Get {
				op.OutBody = e.Body
			}
			if op.Status != register.OK {
				op.OutVer = ""
			}
		}
	}
	return ops
}
