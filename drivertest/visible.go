package drivertest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
)

// The date of a held commit (obligation 15): admin.LateBy trusts an
// object's modification time to be no earlier than when it became visible,
// so a writer held before its commit while another takes over must not read
// as having written before the takeover.

// maxHolds bounds the MayStart calls held: the last part's (reading ahead)
// and the commit's, plus one tolerated.
const maxHolds = 3

// eofWatch is a body that records when its reader has returned io.EOF.
type eofWatch struct {
	r     io.Reader
	ended atomic.Bool
}

func (w *eofWatch) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	if err == io.EOF {
		w.ended.Store(true)
	}
	return n, err
}

// heldCommit streams three parts to a new key, holds each MayStart after the
// body's end past twice the Resolution, and writes another key meanwhile
// (the takeover). The streamed object's Get and List times must not read
// earlier than the takeover's Date, allowing the Resolution.
func heldCommit(ctx context.Context, s *scope) error {
	k, other := s.key("held"), s.key("takeover")
	first, _, err := timedPut(ctx, s.b, other, []byte("before"), driver.Condition{})
	if err != nil {
		return fmt.Errorf("setup: Put of another key: %s", outcome(err))
	}
	if !first.reported {
		return skipped{noServiceTime}
	}
	hold := 2*first.t.Resolution + 500*time.Millisecond
	src := &eofWatch{r: newBody(9, streamBig)}
	var (
		mu    sync.Mutex
		holds int
		seen  timed
	)
	gate := func() error {
		mu.Lock()
		defer mu.Unlock()
		if !src.ended.Load() || holds >= maxHolds {
			return nil
		}
		holds++
		select {
		case <-time.After(hold):
		case <-ctx.Done():
			return ctx.Err()
		}
		t, _, err := timedPut(ctx, s.b, other, fmt.Appendf(nil, "takeover %d", holds), driver.Condition{})
		if err != nil {
			return fmt.Errorf("the takeover's Put, made while the commit is held: %s", outcome(err))
		}
		if !t.reported {
			return errors.New("the driver reported no service time for the takeover's Put, though it did for an earlier one")
		}
		seen = t
		return nil
	}
	v, err := stream(ctx, s.b, k, src, driver.IfAbsent(), streamOpts(gate))
	if sk := notStreamed(err); sk != nil {
		return sk
	}
	if err != nil {
		return fmt.Errorf("PutStream IfAbsent of %d bytes, its commit held %v: %s", streamBig, hold, outcome(err))
	}
	mu.Lock()
	defer mu.Unlock()
	if holds == 0 {
		return errors.New("the driver never asked MayStart after the body's end: it must ask before the commit (driver.StreamOptions)")
	}
	get, gv, err := timedGet(ctx, s.b, k)
	if err != nil {
		return fmt.Errorf("Get of the streamed write: %s", outcome(err))
	}
	if gv != v {
		return fmt.Errorf("PutStream returned version %q, but Get returns %q", v, gv)
	}
	if !get.reported || get.t.Modified.IsZero() {
		return errors.New("the driver reported no modification time for the Get of a streamed write, though it reports the service's time")
	}
	res := max(get.t.Resolution, seen.t.Resolution)
	if err := visibleAfter("the Get", get.t.Modified, seen.t.Date, res, hold); err != nil {
		return err
	}
	return listedAfter(ctx, s, k, seen.t.Date, res, hold)
}

// listedAfter is visibleAfter for the ModTime a listing states of key.
func listedAfter(ctx context.Context, s *scope, k string, takeover time.Time, res, hold time.Duration) error {
	for o, err := range s.b.List(ctx, k) {
		if err != nil {
			return fmt.Errorf("List of the streamed write's key: %s", outcome(err))
		}
		if o.Key == k {
			return visibleAfter("the listing", o.ModTime, takeover, res, hold)
		}
	}
	return fmt.Errorf("List of %q did not list the streamed write", k)
}

// visibleAfter fails if mod is earlier than takeover, allowing res.
func visibleAfter(what string, mod, takeover time.Time, res, hold time.Duration) error {
	if !mod.Add(res).Before(takeover) {
		return nil
	}
	return fmt.Errorf("%s dates the streamed write %s, %v before the takeover's Put was answered (%s, resolution %v), "+
		"though its commit was held %v past that answer: the driver dates an object by when its body was staged, "+
		"not by the commit that made it visible, so a late write reads as made in time",
		what, mod.UTC().Format(time.RFC3339Nano), takeover.Sub(mod).Round(time.Millisecond),
		takeover.UTC().Format(time.RFC3339Nano), res, hold)
}

var visibleChecks = []check{
	check{
		name: "stream-dated-at-commit",
		expect: "a driver that reports the service's time dates a streamed write (Get's modification time, List's ModTime) " +
			"no earlier than the moment its commit made it visible: a commit held past another key's write reads as " +
			"modified no earlier than that write's Date, allowing the Resolution",
		run: heldCommit,
	},
}
