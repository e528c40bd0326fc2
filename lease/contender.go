package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// A Contender takes the lease on one prefix for one instance, remembering
// across attempts what it wrote and what it has seen; use one per instance.
// It is not safe for concurrent Acquire calls.
type Contender struct {
	bucket driver.Bucket
	prefix string
	key    string
	s      *settings
	watch  suspectWatch // a suspect record of another instance
	twin   suspectWatch // a fresh record naming our id that we did not write
	stamps *stamps
	sent   sentRecords // what this contender's attempts wrote
	held   *Lease      // the latest lease it acquired
	// blocked is the record cleanUp left; no acquire before it is stale.
	blocked admin.Record
	journal *journal // the state directory's lock and notes, if any
}

// NewContender returns a contender for the lease on b's prefix.
func NewContender(b *bucket.Bucket, opts *Options) (*Contender, error) {
	return newContender(b.Driver(), b.Prefix(), opts)
}

func newContender(b driver.Bucket, prefix string, opts *Options) (*Contender, error) {
	s, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	if err := admin.CheckKey(admin.Key(prefix)); err != nil {
		return nil, err
	}
	if err := checkPacedTTL(b.Capabilities(), s.ttl, admin.Key(prefix)); err != nil {
		return nil, err
	}
	c := &Contender{bucket: b, prefix: prefix, key: admin.Key(prefix), s: s, stamps: &stamps{rand: s.rand}}
	c.stamps.note(s.clock.Mono(), s.clock.Wall())
	if s.state != "" {
		if c.journal, err = openJournal(s.state, s.id, c.key, s.logger); err != nil {
			return nil, err
		}
		c.sent.journal = c.journal
	}
	return c, nil
}

// Close drops the lock on Options.StateDir, so another process of this
// instance may adopt what it left. It does not release a lease.
func (c *Contender) Close() error { return c.journal.close() }

// InstanceID returns the contender's instance id.
func (c *Contender) InstanceID() string { return c.s.id }

// Acquire is NewContender followed by one Acquire: it takes the lease for a
// new instance. Use a Contender to retry with the same instance id.
func Acquire(ctx context.Context, b *bucket.Bucket, opts *Options) (*Lease, error) {
	c, err := NewContender(b, opts)
	if err != nil {
		return nil, err
	}
	return c.Acquire(ctx)
}

// Acquire takes the lease: one attempt, or with Options.Wait, attempts until
// one takes it.
func (c *Contender) Acquire(ctx context.Context) (*Lease, error) {
	if c.s.wait {
		return c.waitFor(ctx)
	}
	return c.try(ctx)
}

// waitFor retries while the lease is held, sleeping until it could be taken
// over (at most a third of a TTL), until it is taken, an attempt fails
// otherwise, or ctx ends (then wrapping ctx's cause and the last HeldError).
func (c *Contender) waitFor(ctx context.Context) (*Lease, error) {
	for {
		l, err := c.try(ctx)
		var held *HeldError
		if !errors.As(err, &held) || errors.Is(err, ErrInstanceInUse) {
			return l, err
		}
		t := time.NewTimer(heldDelay(held, c.s.ttl))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("acquire %s: stopped waiting: %w: %w", c.key, context.Cause(ctx), err)
		case <-t.C:
		}
	}
}

func heldDelay(held *HeldError, ttl time.Duration) time.Duration {
	poll := max(ttl/3, 100*time.Millisecond)
	if held.TakeoverAt.IsZero() {
		return poll
	}
	return min(max(held.TakeoverAt.Sub(held.Now)+100*time.Millisecond, 100*time.Millisecond), poll)
}
