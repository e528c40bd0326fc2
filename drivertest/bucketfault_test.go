package drivertest_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/mem"
	"github.com/mushroomdb/bucketlease/drivertest"
)

// The negative controls of the faults at the Bucket (Options.BucketFaults):
// drivers that send no HTTP request, each wrong in a way the world shows
// only through a lost reply, a retry or a cancellation. TestMem and TestFile
// are the positive controls.

// bucketFaults are the checks Options.BucketFaults runs on a driver that
// sends no HTTP request.
var bucketFaults = []string{"put-canceled-mid-body", "put-retry-after-landed", "lease-lost-reply-wire"}

// midWrite is the mem driver with a write that looks at its context
// twice, as a local driver does between its steps (the lock, the staged
// file, the rename): once on entry, and once half-way through the body,
// where it does what how says on finding the context cancelled.
type midWrite struct {
	*mem.Bucket
	how func(b *midWrite, ctx context.Context, key string, data []byte, cond driver.Condition) (driver.Attrs, error)
}

func (b *midWrite) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	if err := ctx.Err(); err != nil {
		return driver.Attrs{}, &driver.OpError{Driver: "midwrite", Op: "put", Key: key, Cond: opts.If, Err: err}
	}
	if ctx.Err() != nil {
		return b.how(b, ctx, key, data, opts.If)
	}
	return b.Bucket.Put(ctx, key, data, opts)
}

// TestCancelledLocalWriteTorn: a driver that, cancelled half-way through
// a body, keeps the half it wrote.
func TestCancelledLocalWriteTorn(t *testing.T) {
	b := &midWrite{Bucket: mem.New(), how: func(b *midWrite, ctx context.Context, key string, data []byte, cond driver.Condition) (driver.Attrs, error) {
		_, _ = b.Bucket.Put(context.WithoutCancel(ctx), key, data[:len(data)/2], driver.PutOptions{})
		return driver.Attrs{}, &driver.OpError{Driver: "midwrite", Op: "put", Key: key, Cond: cond, Err: context.Cause(ctx)}
	}}
	failed, _ := failedChecks(t, b, drivertest.Options{BucketFaults: true}, "put-canceled-mid-body")
	mustCatch(t, failed, "put-canceled-mid-body", "neither the old object nor the whole new one")
}

// TestCancelledLocalWriteLosesTheCause: a driver that, cancelled half-way,
// stops and says only that the write was aborted, so the caller cannot
// tell its own cancellation from the store's failure.
func TestCancelledLocalWriteLosesTheCause(t *testing.T) {
	b := &midWrite{Bucket: mem.New(), how: func(_ *midWrite, _ context.Context, key string, _ []byte, cond driver.Condition) (driver.Attrs, error) {
		return driver.Attrs{}, &driver.OpError{Driver: "midwrite", Op: "put", Key: key, Cond: cond, Err: errors.New("write aborted")}
	}}
	failed, _ := failedChecks(t, b, drivertest.Options{BucketFaults: true}, "put-canceled-mid-body")
	mustCatch(t, failed, "put-canceled-mid-body", "not context.Canceled")
}

// replayAccepted takes a conditional write of the bytes the key already
// holds for a success, with the current version, whatever its condition:
// a driver that makes its writes "idempotent" by content, so that a caller
// whose first attempt landed and whose reply was lost hears that its
// retry won, and a writer racing it with the same bytes hears the same.
type replayAccepted struct{ *mem.Bucket }

func (b replayAccepted) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	if opts.If != (driver.Condition{}) {
		if rc, a, err := b.Bucket.Get(ctx, key, driver.GetOptions{}); err == nil {
			cur, rerr := io.ReadAll(rc)
			rc.Close()
			if rerr == nil && bytes.Equal(cur, data) {
				return driver.Attrs{Version: a.Version, Time: a.Time}, nil
			}
		}
	}
	return b.Bucket.Put(ctx, key, data, opts)
}

func TestRetryOfALandedWriteAccepted(t *testing.T) {
	failed, _ := failedChecks(t, replayAccepted{mem.New()}, drivertest.Options{BucketFaults: true}, "put-retry-after-landed")
	mustCatch(t, failed, "put-retry-after-landed", "must refuse it with ErrPrecondition")
}

// TestBucketFaultsRunWithoutHTTP: on a driver that sends no HTTP request,
// Options.BucketFaults runs every check of a lost reply, a retry and a
// cancellation (none skipped), and without it each says what it needs.
func TestBucketFaultsRunWithoutHTTP(t *testing.T) {
	rep := drivertest.CheckOnly(context.Background(), mem.New(), drivertest.Options{BucketFaults: true}, bucketFaults...)
	for _, r := range rep.Results {
		if r.Status() != "PASS" {
			t.Errorf("%s on mem with BucketFaults: %s (%s), want PASS", r.Name, r.Status(), r.Got)
		}
	}
	rep = drivertest.CheckOnly(context.Background(), mem.New(), drivertest.Options{}, bucketFaults...)
	for _, r := range rep.Results {
		if !r.Skipped {
			t.Errorf("%s on mem without BucketFaults: %s (%s), want skipped", r.Name, r.Status(), r.Got)
		}
	}
}

// getsOwnForm reports versions from Get in a form of its own ("g-" and
// the stored version) that its Put does not take back under IfMatch: a
// caller that only ever uses the version its Put returned never sees the
// difference, and one whose Put reply was lost must go on from the version
// Get gives it.
type getsOwnForm struct{ *mem.Bucket }

func (b getsOwnForm) Get(ctx context.Context, key string, opts driver.GetOptions) (io.ReadCloser, driver.Attrs, error) {
	rc, a, err := b.Bucket.Get(ctx, key, opts)
	if err != nil {
		return rc, a, err
	}
	a.Version = "g-" + a.Version
	return rc, a, nil
}

func TestLostReplyLeavesOnlyGetsVersion(t *testing.T) {
	failed, _ := failedChecks(t, getsOwnForm{mem.New()}, drivertest.Options{BucketFaults: true}, "lease-lost-reply-wire")
	mustCatch(t, failed, "lease-lost-reply-wire", "lost at the Bucket")
}
