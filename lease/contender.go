package lease

import (
	"context"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// A Contender tries to take the lease on one prefix for one instance. It
// keeps the instance id and what it has seen of a suspect foreign record
// across attempts, so use one Contender for all of an
// instance's attempts. A Contender is not safe for concurrent Acquire calls.
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
	// blocked is the record a failed acquire left to block the prefix;
	// the contender does not acquire before it is stale.
	blocked admin.Record
	journal *journal // the state directory's lock and notes, if any
}

// NewContender returns a contender for the lease on b's prefix.
func NewContender(b *bucket.Bucket, opts *Options) (*Contender, error) {
	return newContender(b.Driver(), b.Prefix(), opts)
}

// newContender returns a contender for the lease on prefix in b.
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

// Close drops the contender's lock on its state directory (Options.StateDir),
// so that another process of this instance may adopt what it left. A
// contender without a state directory has nothing to close. Close does not
// release a lease; Release it first.
func (c *Contender) Close() error { return c.journal.close() }

// InstanceID returns the contender's instance id.
func (c *Contender) InstanceID() string { return c.s.id }

// Acquire takes the lease on b's prefix for a new instance; it is
// NewContender followed by one Acquire. Use a Contender to retry with the
// same instance id.
func Acquire(ctx context.Context, b *bucket.Bucket, opts *Options) (*Lease, error) {
	c, err := NewContender(b, opts)
	if err != nil {
		return nil, err
	}
	return c.Acquire(ctx)
}

// Acquire takes the lease: one attempt, or, with Options.Wait, attempts
// until one takes it (see try).
func (c *Contender) Acquire(ctx context.Context) (*Lease, error) {
	if c.s.wait {
		return c.waitFor(ctx)
	}
	return c.try(ctx)
}
