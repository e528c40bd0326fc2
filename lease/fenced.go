package lease

import (
	"context"
	"errors"
	"fmt"
	"io"
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
	if !f.l.MayWrite() {
		reason := f.l.Err()
		if reason == nil {
			reason = ErrFenced
		}
		return &driver.OpError{Driver: "lease", Op: op, Key: full, Cond: cond, Err: fmt.Errorf("refused to start: %w", reason)}
	}
	fctx, cancel := f.l.Fence(ctx)
	defer cancel()
	err = do(fctx, full)
	if err != nil && ctx.Err() == nil && fctx.Err() != nil {
		return &driver.OpError{Driver: "lease", Op: op, Key: full, Cond: cond,
			Err: fmt.Errorf("cancelled in flight: %w (%w)", context.Cause(fctx), err)}
	}
	return err
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

func (f fencedBucket) Delete(ctx context.Context, key string, cond driver.Condition) error {
	return f.guard(ctx, "delete", key, cond, func(ctx context.Context, full string) error {
		return f.l.b.Delete(ctx, full, cond)
	})
}
