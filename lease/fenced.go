package lease

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"strings"

	"github.com/mushroomdb/bucketlease/driver"
)

// Bucket returns the bucket for the worker's own writes under the lease,
// with keys relative to the lease's prefix: Put(ctx, "chunks/0001", …)
// writes {prefix}/chunks/0001, whatever form the prefix came in ("db1",
// "db1/", or "" for a whole bucket). It refuses to start a Put or Delete
// once MayWrite is false (with an error wrapping ErrFenced, ErrLost or
// ErrReleased), and cancels one in flight the moment the lease ends. Reads
// pass through. It refuses a key that starts with "/" and any write to the
// lease object itself, which only the lease writes.
func (l *Lease) Bucket() driver.Bucket { return fencedBucket{l} }

type fencedBucket struct{ l *Lease }

func (f fencedBucket) Capabilities() driver.Capabilities { return f.l.b.Capabilities() }

// full returns the bucket key of a key relative to the prefix.
func (f fencedBucket) full(op, key string, cond driver.Condition) (string, error) {
	if key == "" || strings.HasPrefix(key, "/") {
		return "", &driver.OpError{Driver: "lease", Op: op, Key: key, Cond: cond, Kind: driver.ErrInvalidKey,
			Err: errors.New("keys of Lease.Bucket are relative to the lease's prefix: not empty, no leading slash")}
	}
	if f.l.prefix == "" {
		return key, nil
	}
	return f.l.prefix + "/" + key, nil
}

func (f fencedBucket) Get(ctx context.Context, key string) (io.ReadCloser, driver.Version, error) {
	full, err := f.full("get", key, driver.Condition{})
	if err != nil {
		return nil, "", err
	}
	return f.l.b.Get(ctx, full)
}

// guard runs op on the full key under the fence, or refuses to start it.
func (f fencedBucket) guard(ctx context.Context, op, key string, cond driver.Condition, do func(context.Context, string) error) error {
	full, err := f.full(op, key, cond)
	if err != nil {
		return err
	}
	if full == f.l.key {
		return &driver.OpError{Driver: "lease", Op: op, Key: full, Cond: cond,
			Err: errors.New("refused: the lease object is written only by the lease itself")}
	}
	fctx, finish, err := f.l.startWrite(ctx)
	if err != nil {
		return &driver.OpError{Driver: "lease", Op: op, Key: full, Cond: cond, Err: fmt.Errorf("refused to start: %w", err)}
	}
	defer finish()
	err = do(fctx, full)
	if err != nil && ctx.Err() == nil && fctx.Err() != nil {
		return &driver.OpError{Driver: "lease", Op: op, Key: full, Cond: cond,
			Err: fmt.Errorf("cancelled in flight: %w (%w)", context.Cause(fctx), err)}
	}
	return err
}

// startWrite admits one write under the lease, or refuses it once MayWrite
// is false. The check and the count are one step under l.mu, so a write is
// either refused or counted before Release can mark the lease released:
// Release waits for every counted write to return (finish). The context is
// cancelled the moment the lease ends.
func (l *Lease) startWrite(ctx context.Context) (context.Context, func(), error) {
	l.mu.Lock()
	if !l.mayWriteLocked() {
		reason := l.done
		l.mu.Unlock()
		if reason == nil {
			reason = ErrFenced
		}
		return nil, nil, reason
	}
	l.writes++
	l.mu.Unlock()
	fctx, cancel := l.Fence(ctx)
	return fctx, func() {
		cancel()
		l.mu.Lock()
		defer l.mu.Unlock()
		l.writes--
		if l.writes == 0 && l.idle != nil {
			close(l.idle)
			l.idle = nil
		}
	}, nil
}

// waitWrites waits until every write through Bucket has returned, or ctx
// ends; the lease has ended, so no new write starts.
func (l *Lease) waitWrites(ctx context.Context) error {
	l.mu.Lock()
	if l.writes == 0 {
		l.mu.Unlock()
		return nil
	}
	if l.idle == nil {
		l.idle = make(chan struct{})
	}
	idle, n := l.idle, l.writes
	l.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: %d write(s) through Lease.Bucket, cancelled when the lease ended, had not returned when the release's context ended (%w)",
			ErrWritesInFlight, n, context.Cause(ctx))
	}
}

func (f fencedBucket) Put(ctx context.Context, key string, data []byte, cond driver.Condition) (driver.Version, error) {
	var v driver.Version
	err := f.guard(ctx, "put", key, cond, func(ctx context.Context, full string) error {
		var err error
		v, err = f.l.b.Put(ctx, full, data, cond)
		return err
	})
	return v, err
}

// PutStream streams a body under the fence: it refuses to start once
// MayWrite is false, no part and no commit starts after that (the driver
// calls MayStart before each request), and a request in flight is cancelled
// the moment the lease ends, after which the driver aborts the upload.
// Release waits for it to return. Without a driver Streamer it falls back
// as driver.PutStream does.
func (f fencedBucket) PutStream(ctx context.Context, key string, r io.Reader, cond driver.Condition, opts *driver.StreamOptions) (driver.Version, error) {
	var v driver.Version
	err := f.guard(ctx, "put", key, cond, func(ctx context.Context, full string) error {
		o := driver.StreamOptions{}
		if opts != nil {
			o = *opts
		}
		userGate := o.MayStart
		o.MayStart = func() error {
			if !f.l.MayWrite() {
				reason := f.l.Err()
				if reason == nil {
					reason = ErrFenced
				}
				return reason
			}
			if userGate != nil {
				return userGate()
			}
			return nil
		}
		var err error
		v, err = driver.PutStream(ctx, f.l.b, full, r, cond, &o)
		return err
	})
	return v, err
}

func (f fencedBucket) Delete(ctx context.Context, key string, cond driver.Condition) error {
	return f.guard(ctx, "delete", key, cond, func(ctx context.Context, full string) error {
		return f.l.b.Delete(ctx, full, cond)
	})
}

// List yields the objects whose keys, relative to the lease's prefix,
// start with prefix, with their keys relative to the lease's prefix. The
// lease object itself is left out. Listing is a read: it passes through the
// fence.
func (f fencedBucket) List(ctx context.Context, prefix string) iter.Seq2[driver.Object, error] {
	base := ""
	if f.l.prefix != "" {
		base = f.l.prefix + "/"
	}
	return func(yield func(driver.Object, error) bool) {
		for o, err := range driver.List(ctx, f.l.b, base+prefix) {
			if err != nil {
				yield(o, err)
				return
			}
			if o.Key == f.l.key || !strings.HasPrefix(o.Key, base) {
				continue
			}
			o.Key = o.Key[len(base):]
			if !yield(o, nil) {
				return
			}
		}
	}
}
