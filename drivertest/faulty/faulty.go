// Package faulty wraps a driver.Bucket to misbehave as real services and
// networks do: ignore a write's condition, lie about a refusal, lose a
// reply, refuse for its rate, report a wrong time. Negative controls use it
// to show that a check catches a broken store.
package faulty

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"

	"github.com/mushroomdb/bucketlease/driver"
)

// Ignore selects which preconditions a Bucket ignores on Put.
type Ignore int

const (
	IgnoreNothing  Ignore = 0
	IgnoreIfAbsent Ignore = 1 << iota
	IgnoreIfMatch
	// LieOnRefusal reports success, with a made-up version, for a Put the
	// inner bucket refused.
	LieOnRefusal
)

// Bucket wraps a bucket that it makes misbehave; it still declares the inner
// bucket's Capabilities, as a lying service would.
type Bucket struct {
	driver.Bucket
	Ignore Ignore
	// Only, if set, limits the misbehaviour to the keys it reports true
	// for: a path that treats one key unlike its neighbours.
	Only func(key string) bool
}

// Put applies the configured misbehaviour.
func (b *Bucket) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	if b.Only != nil && !b.Only(key) {
		return b.Bucket.Put(ctx, key, data, opts)
	}
	if opts.If == driver.IfAbsent() && b.Ignore&IgnoreIfAbsent != 0 {
		opts.If = driver.Condition{}
	}
	if _, ok := opts.If.Match(); ok && b.Ignore&IgnoreIfMatch != 0 {
		opts.If = driver.Condition{}
	}
	a, err := b.Bucket.Put(ctx, key, data, opts)
	if errors.Is(err, driver.ErrPrecondition) && b.Ignore&LieOnRefusal != 0 {
		return driver.Attrs{Version: "lie", Time: a.Time}, nil
	}
	return a, err
}

// PutStream reads the body whole and writes it with Put, so that the
// misbehaviour reaches a streamed write too (driver.PutWhole).
func (b *Bucket) PutStream(ctx context.Context, key string, r io.Reader, opts driver.PutOptions, s *driver.StreamOptions) (driver.Attrs, error) {
	return driver.PutWhole(ctx, b, key, r, opts, s)
}

// Counting counts the requests that reach the inner bucket.
type Counting struct {
	driver.Bucket
	gets, puts, deletes atomic.Int64
}

// Get counts and forwards.
func (c *Counting) Get(ctx context.Context, key string, opts driver.GetOptions) (io.ReadCloser, driver.Attrs, error) {
	c.gets.Add(1)
	return c.Bucket.Get(ctx, key, opts)
}

// Put counts and forwards.
func (c *Counting) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	c.puts.Add(1)
	return c.Bucket.Put(ctx, key, data, opts)
}

// PutStream reads the body whole and writes it with Put, counted as one
// (driver.PutWhole).
func (c *Counting) PutStream(ctx context.Context, key string, r io.Reader, opts driver.PutOptions, s *driver.StreamOptions) (driver.Attrs, error) {
	return driver.PutWhole(ctx, c, key, r, opts, s)
}

// Delete counts and forwards.
func (c *Counting) Delete(ctx context.Context, key string, cond driver.Condition) error {
	c.deletes.Add(1)
	return c.Bucket.Delete(ctx, key, cond)
}

// Counts returns the numbers of Get, Put and Delete requests so far.
func (c *Counting) Counts() (gets, puts, deletes int64) {
	return c.gets.Load(), c.puts.Load(), c.deletes.Load()
}

// ErrReplyLost is what LostReply returns for a write it applied but whose
// answer it threw away.
var ErrReplyLost = errors.New("faulty: reply lost after the request was applied")

// LostReply applies writes and, for those Drop selects, returns
// ErrReplyLost, or with AsRefusal ErrPrecondition (what a client's retry of
// a landed write gets).
type LostReply struct {
	driver.Bucket
	mu        sync.Mutex
	Drop      func(op, key string, cond driver.Condition) bool
	AsRefusal bool
}

func (l *LostReply) lost(op, key string, cond driver.Condition) error {
	if l.AsRefusal {
		return &driver.OpError{Driver: "faulty", Op: op, Key: key, Cond: cond, Kind: driver.ErrPrecondition, Err: ErrReplyLost}
	}
	return &driver.OpError{Driver: "faulty", Op: op, Key: key, Cond: cond, Err: ErrReplyLost}
}

// Put forwards, then may lose the reply.
func (l *LostReply) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	a, err := l.Bucket.Put(ctx, key, data, opts)
	if l.drop("put", key, opts.If) {
		return driver.Attrs{}, l.lost("put", key, opts.If)
	}
	return a, err
}

// PutStream reads the body whole and writes it with Put, which may lose
// the reply (driver.PutWhole).
func (l *LostReply) PutStream(ctx context.Context, key string, r io.Reader, opts driver.PutOptions, s *driver.StreamOptions) (driver.Attrs, error) {
	return driver.PutWhole(ctx, l, key, r, opts, s)
}

// Delete forwards, then may lose the reply.
func (l *LostReply) Delete(ctx context.Context, key string, cond driver.Condition) error {
	err := l.Bucket.Delete(ctx, key, cond)
	if l.drop("delete", key, cond) {
		return l.lost("delete", key, cond)
	}
	return err
}

func (l *LostReply) drop(op, key string, cond driver.Condition) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.Drop != nil && l.Drop(op, key, cond)
}

// Failing runs Before ahead of every request and returns its error instead
// of sending; Before may block until ctx is done, as a hung request does.
type Failing struct {
	driver.Bucket
	Before func(ctx context.Context, op, key string, cond driver.Condition) error
}

func (f *Failing) before(ctx context.Context, op, key string, cond driver.Condition) error {
	if f.Before == nil {
		return nil
	}
	if err := f.Before(ctx, op, key, cond); err != nil {
		return &driver.OpError{Driver: "faulty", Op: op, Key: key, Cond: cond, Err: err}
	}
	return nil
}

// Get runs Before, then forwards.
func (f *Failing) Get(ctx context.Context, key string, opts driver.GetOptions) (io.ReadCloser, driver.Attrs, error) {
	if err := f.before(ctx, "get", key, driver.Condition{}); err != nil {
		return nil, driver.Attrs{}, err
	}
	return f.Bucket.Get(ctx, key, opts)
}

// Put runs Before, then forwards.
func (f *Failing) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	if err := f.before(ctx, "put", key, opts.If); err != nil {
		return driver.Attrs{}, err
	}
	return f.Bucket.Put(ctx, key, data, opts)
}

// PutStream reads the body whole and writes it with Put, which runs
// Before (driver.PutWhole).
func (f *Failing) PutStream(ctx context.Context, key string, r io.Reader, opts driver.PutOptions, s *driver.StreamOptions) (driver.Attrs, error) {
	return driver.PutWhole(ctx, f, key, r, opts, s)
}

// Delete runs Before, then forwards.
func (f *Failing) Delete(ctx context.Context, key string, cond driver.Condition) error {
	if err := f.before(ctx, "delete", key, cond); err != nil {
		return err
	}
	return f.Bucket.Delete(ctx, key, cond)
}

// NoConditionalDelete declares that its service has no conditional delete,
// as R2 and MinIO drivers do, and refuses one.
type NoConditionalDelete struct{ driver.Bucket }

// Capabilities clears ConditionalDelete.
func (n NoConditionalDelete) Capabilities() driver.Capabilities {
	c := n.Bucket.Capabilities()
	c.ConditionalDelete = false
	return c
}

// Delete refuses a condition with ErrUnsupported.
func (n NoConditionalDelete) Delete(ctx context.Context, key string, cond driver.Condition) error {
	if cond != (driver.Condition{}) {
		return &driver.OpError{Driver: "faulty", Op: "delete", Key: key, Cond: cond, Kind: driver.ErrUnsupported}
	}
	return n.Bucket.Delete(ctx, key, cond)
}
