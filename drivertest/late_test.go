package drivertest_test

import (
	"bytes"
	"context"
	"iter"
	"sync"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/mem"
	"github.com/mushroomdb/bucketlease/drivertest"
)

// lateLander is an honest store whose first Put never answers: the
// service applies it lateBy after the caller gave up on it, as it does a
// request that a proxy or a congested path held back.
type lateLander struct {
	*mem.Bucket
	lateBy time.Duration
	once   sync.Once
	landed chan struct{} // closed when the late write has landed
}

func (l *lateLander) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	first := false
	l.once.Do(func() { first = true })
	if !first {
		return l.Bucket.Put(ctx, key, data, opts)
	}
	<-ctx.Done()
	data = bytes.Clone(data)
	go func() {
		defer close(l.landed)
		time.Sleep(l.lateBy)
		_, _ = l.Bucket.Put(context.Background(), key, data, opts)
	}()
	return driver.Attrs{}, ctx.Err()
}

func (l *lateLander) List(ctx context.Context, prefix string) iter.Seq2[driver.Object, error] {
	return l.Bucket.List(ctx, prefix)
}

// TestLateWriteIsSwept: a check that ran out of time abandoned a write
// that the service applied after the check's clean-up; Check still leaves
// nothing behind, because it sweeps what the checks that could not
// complete left, a second after the last check. The mutant
// drivertest-no-late-sweep (lab/mutate/mutants.txt) takes the sweep away:
// the late write's object stays in probe's scratch prefix
// (TestProbeErrorsMinIO).
func TestLateWriteIsSwept(t *testing.T) {
	m := mem.New()
	b := &lateLander{Bucket: m, lateBy: 300 * time.Millisecond, landed: make(chan struct{})}
	// The first check that writes, and the next: the late write lands
	// after the first's clean-up and before the sweep.
	rep := drivertest.CheckOnly(context.Background(), b, drivertest.Options{Prefix: "dt", Timeout: 2 * time.Second},
		"put-if-absent-new", "put-if-absent-existing")
	select {
	case <-b.landed:
	case <-time.After(time.Minute):
		t.Fatal("the late write never landed")
	}
	if len(rep.Inconclusive()) == 0 {
		t.Fatal("no check was inconclusive, though the first Put never answered")
	}
	for o, err := range m.List(context.Background(), "dt/") {
		if err != nil {
			t.Fatal(err)
		}
		t.Errorf("left behind: %s", o.Key)
	}
}
