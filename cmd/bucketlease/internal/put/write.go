package put

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/internal/leaseseam"
	"github.com/mushroomdb/bucketlease/lease"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// The part size and concurrency of an upload that does not set them:
// two parts of 5 MiB in flight (and LimitHeap) keep a 1 GiB stream from
// a pipe to a loopback MinIO within 64 MiB resident, where the drivers'
// own defaults (four parts of 16 MiB) hold twice as much.
const (
	DefaultPartSize    = 5 << 20
	DefaultConcurrency = 2
)

// heapSlack is what an upload's heap holds beyond its parts in flight:
// the body's pipe, the HTTP client's buffers, the parts' hashes.
const heapSlack = 14 << 20

// LimitHeap sets the Go runtime's soft memory limit to what an upload of
// h holds (its parts in flight, and heapSlack), so that the garbage it
// makes is collected before the heap doubles, and returns the function
// that restores the limit before. The command calls it unless GOMEMLIMIT
// sets the user's own limit.
func LimitHeap(h Header) (restore func()) {
	prev := debug.SetMemoryLimit(h.PartSize*int64(h.Concurrency) + heapSlack)
	return func() { debug.SetMemoryLimit(prev) }
}

// Settle settles what a write of key through l's fenced bucket did, from
// its result v, err. late reports, with err nil, an object stored but
// perhaps late (a LateError's case): the service answered only after the
// lease was fenced, or the fence cut the write off while its last request
// was on the way and the key holds an object with l's stamp all the same.
// A write the fence cut off that left nothing there yet returns its error,
// saying that a request still on its way may land later. Otherwise it
// returns v and err as they were. put URL and put inside hold (Serve)
// both settle their writes with it.
func Settle(ctx context.Context, l *lease.Lease, key string, v driver.Version, err error) (driver.Version, bool, error) {
	if err == nil {
		return v, !l.MayWrite(), nil
	}
	if Classify(l, err) == ClassFenced {
		if sv, ok := storedAnyway(ctx, l, key); ok {
			return sv, true, nil
		}
		// The read-back proves nothing of a request still on its way.
		err = fmt.Errorf("%w; the upload was aborted and %s held nothing of this lease's when put read it back, "+
			"but a request already on its way (a write held up in the network) may still land: bucketlease list --late names it if it does", err, key)
	}
	return v, false, err
}

// storedAnyway reports whether key holds an object stamped by l, and its
// version: a write the fence cut off while its last request was on the
// way, which the service stored all the same (a put woken from a pause
// learns of its fence before it reads the answer waiting for it). Where
// the driver keeps no stamps it cannot tell, and says no.
func storedAnyway(ctx context.Context, l *lease.Lease, key string) (driver.Version, bool) {
	want, ok := admin.Stamp{Epoch: l.Epoch(), Instance: admin.StampedInstance(l.InstanceID())}, leaseseam.Inside(l).Stamped
	if !ok {
		return "", false
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	rc, a, err := l.Bucket().Driver().Get(rctx, key, driver.GetOptions{Metadata: true})
	if err != nil {
		return "", false
	}
	rc.Close()
	got, ok := admin.StampOf(a.Metadata)
	return a.Version, ok && got == want
}

// A LateError is put's outcome when the service answered its commit only
// after the lease was fenced: the write was sent in time, but nothing
// shows when it landed, which may have been after another holder took the
// prefix over. It wraps lease.ErrFenced.
type LateError struct {
	Key     string
	Version driver.Version
}

func (e *LateError) Error() string {
	return fmt.Sprintf("put %s: stored (version %s), but the service answered only after the lease was fenced (%v): "+
		"put was paused or its request held up, so the object may have landed after another holder took the prefix over, a late write; "+
		"bucketlease list --late names it if it did, and a restore must not trust it then", e.Key, e.Version, lease.ErrFenced)
}

func (e *LateError) Unwrap() error { return lease.ErrFenced }

// RefuseExisting refuses a write under IfAbsent to a key that exists,
// with one read before the body is streamed. A read that is not allowed
// (write-only credentials) proceeds: the commit's condition decides.
func RefuseExisting(ctx context.Context, b driver.Bucket, key string, cond driver.Condition) error {
	if cond != driver.IfAbsent() {
		return nil
	}
	rc, a, err := b.Get(ctx, key, driver.GetOptions{})
	v := a.Version
	switch {
	case err == nil:
		rc.Close()
		return fmt.Errorf("refused, the key %s exists (version %s): %w (--if-absent); nothing was written: put a date in the key, or pass --if-match %s or --overwrite",
			key, v, driver.ErrPrecondition, v)
	case errors.Is(err, driver.ErrNotExist), errors.Is(err, driver.ErrPermission):
		return nil
	}
	return fmt.Errorf("reading the key %s before writing it: %w; nothing was written", key, err)
}

// Fenced streams body into key through l.Bucket. A body that blocks (a
// pipe whose writer stalls) is cut off at the fence, so that the upload
// aborts then rather than when the writer goes on.
func Fenced(ctx context.Context, l *lease.Lease, key string, body io.Reader, cond driver.Condition, opts *driver.StreamOptions) (driver.Version, error) {
	fctx, cancel := l.Fence(ctx)
	defer cancel()
	pr, pw := io.Pipe()
	go func() {
		_, err := io.CopyBuffer(pw, body, make([]byte, 1<<20))
		pw.CloseWithError(err)
	}()
	stop := context.AfterFunc(fctx, func() {
		why := context.Cause(fctx)
		if !l.MayWrite() {
			if why = l.Err(); why == nil {
				why = lease.ErrFenced
			}
		}
		pr.CloseWithError(fmt.Errorf("the body was cut off: %w", why))
	})
	defer stop()
	defer pr.Close()
	a, err := l.Bucket().Driver().PutStream(fctx, key, pr, driver.PutOptions{If: cond}, opts)
	return a.Version, err
}
