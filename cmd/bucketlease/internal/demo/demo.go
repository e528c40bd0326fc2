package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/clock"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/mem"
	"github.com/mushroomdb/bucketlease/internal/leaseseam"
	"github.com/mushroomdb/bucketlease/lease"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// The demo's settings: the default TTL, so the story's numbers are the
// ones a user meets.
var (
	demoTTL    = lease.DefaultTTL
	demoStart  = time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	demoPrefix = "backups/db1"
)

// errUnreachable is the demo's simulated network failure.
var errUnreachable = errors.New("network unreachable (simulated)")

// network is one instance's path to the shared bucket, which the demo can
// cut.
type network struct {
	driver.Bucket
	down atomic.Bool
}

func (n *network) check(op, key string, cond driver.Condition) error {
	if n.down.Load() {
		return &driver.OpError{Driver: "mem", Op: op, Key: key, Cond: cond, Err: errUnreachable}
	}
	return nil
}

func (n *network) Get(ctx context.Context, key string, opts driver.GetOptions) (io.ReadCloser, driver.Attrs, error) {
	if err := n.check("get", key, driver.Condition{}); err != nil {
		return nil, driver.Attrs{}, err
	}
	return n.Bucket.Get(ctx, key, opts)
}

func (n *network) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	if err := n.check("put", key, opts.If); err != nil {
		return driver.Attrs{}, err
	}
	return n.Bucket.Put(ctx, key, data, opts)
}

func (n *network) PutStream(ctx context.Context, key string, r io.Reader, opts driver.PutOptions, s *driver.StreamOptions) (driver.Attrs, error) {
	if err := n.check("put", key, opts.If); err != nil {
		return driver.Attrs{}, err
	}
	return n.Bucket.PutStream(ctx, key, r, opts, s)
}

func (n *network) List(ctx context.Context, prefix string) iter.Seq2[driver.Object, error] {
	return func(yield func(driver.Object, error) bool) {
		if err := n.check("list", prefix, driver.Condition{}); err != nil {
			yield(driver.Object{}, err)
			return
		}
		for o, err := range n.Bucket.List(ctx, prefix) {
			if !yield(o, err) {
				return
			}
		}
	}
}

func (n *network) Delete(ctx context.Context, key string, cond driver.Condition) error {
	if err := n.check("delete", key, cond); err != nil {
		return err
	}
	return n.Bucket.Delete(ctx, key, cond)
}

// instance is one of the demo's two processes: its own clock, its own way
// to the bucket, its own contender.
type instance struct {
	name  string
	clock *clock.Fake
	net   *network
	c     *lease.Contender
	l     *lease.Lease
}

// story prints the demo's timeline.
type story struct {
	mu sync.Mutex
	w  io.Writer
}

// at formats a wall-clock time as the time elapsed since the demo started.
func at(t time.Time) string {
	d := t.Sub(demoStart).Round(time.Second)
	return fmt.Sprintf("%d:%02d", int(d.Minutes()), int(d.Seconds())%60)
}

func (s *story) say(t time.Time, who, what string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.w, "  %5s  %-5s  %s\n", at(t), who, what)
}

func (s *story) aside(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.w, "  %5s  %-5s  %s\n", "", "", fmt.Sprintf(format, args...))
}

// onEvent turns the library's events into lines of the story, with why.
func (s *story) onEvent(name string) func(lease.Event) {
	return func(ev lease.Event) {
		var what string
		switch ev.Kind {
		case lease.EventAcquired:
			what = fmt.Sprintf("ACQUIRED the lease %s: the key was free, and its write with If-None-Match: * got there first", ev.Key)
		case lease.EventRenewed:
			what = fmt.Sprintf("renewed (a write with If-Match on its last version); nobody may take over before %s", at(ev.Time.Add(demoTTL)))
		case lease.EventFenced:
			what = fmt.Sprintf("FENCED itself: no renewal for %v (two thirds of the TTL), so it starts no more writes, %v before anyone may take over",
				demoTTL*2/3, demoTTL/3)
		case lease.EventTookOver:
			what = fmt.Sprintf("TOOK OVER the lease from %s: it was not renewed for a whole TTL (%v), so its holder is dead or cut off",
				ev.Previous.InstanceID, demoTTL)
		case lease.EventLost:
			who := "someone else"
			if ev.Previous != nil {
				who = ev.Previous.InstanceID
			}
			what = fmt.Sprintf("learns it LOST the lease: the LEASE object now names %s", who)
		case lease.EventReleased:
			what = "released the lease (an If-Match overwrite of its own version by a released record, ttl_s 0, never a delete), so anyone may take it at once"
		default:
			what = ev.Kind.String()
		}
		s.say(ev.Time, name, what)
	}
}

func newInstance(s *story, shared driver.Bucket, name string) (*instance, error) {
	in := &instance{name: name, clock: clock.NewFake(demoStart), net: &network{Bucket: shared}}
	c, err := lease.NewContender(bucket.New(in.net, demoPrefix), leaseseam.With(&lease.Options{
		TTL: demoTTL, InstanceID: name, OnEvent: s.onEvent(name),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}, leaseseam.Seams{Clock: in.clock,
		Getenv: func(string) string { return "" },
	}))

	in.c = c
	return in, err
}

// Run plays the story to w.
func Run(ctx context.Context, w io.Writer) error {
	s := &story{w: w}
	shared := mem.New()
	alpha, err := newInstance(s, shared, "alpha")
	if err != nil {
		return err
	}
	shared.Now = alpha.clock.Wall // the service's clock: simulated time, as both instances' clocks read it
	beta, err := newInstance(s, shared, "beta")
	if err != nil {
		return err
	}
	fmt.Fprintf(w, `Two instances, alpha and beta, are configured with one backup prefix,
%s; the lease object %s names the one that may write.
With a TTL of %v the holder renews every %v and stops writing %v after its
last renewal, and nobody may take the lease over until %v after it.
(An in-memory bucket and simulated time; the lease library runs unchanged.)

   TIME  WHO    WHAT HAPPENED, AND WHY
`, demoPrefix, admin.Key(demoPrefix), demoTTL, demoTTL/3, demoTTL*2/3, demoTTL)
	clocks := []*clock.Fake{alpha.clock, beta.clock}
	advanceTo := func(elapsed time.Duration) {
		for _, c := range clocks {
			c.Advance(demoStart.Add(elapsed).Sub(c.Wall()))
		}
	}
	holder, other, err := race(ctx, s, alpha, beta)
	if err != nil {
		return err
	}
	return playAfterRace(ctx, s, holder, other, advanceTo)
}

// race starts both instances together; exactly one gets the lease, and
// the other is told who has it.
func race(ctx context.Context, s *story, a, b *instance) (holder, other *instance, err error) {
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, in := range []*instance{a, b} {
		wg.Go(func() { in.l, errs[i] = in.c.Acquire(ctx) })
	}
	passTimeUntil(&wg, a.clock, b.clock)
	switch {
	case errs[0] == nil && errs[1] != nil:
		holder, other, err = a, b, errs[1]
	case errs[1] == nil && errs[0] != nil:
		holder, other, err = b, a, errs[0]
	default:
		return nil, nil, fmt.Errorf("demo: two instances started together and not exactly one got the lease (%v; %v): the bucket's compare-and-swap is broken", errs[0], errs[1])
	}
	if !refused(s, other, err) {
		return nil, nil, fmt.Errorf("demo: %s was not refused as expected: %w", other.name, err)
	}
	return holder, other, nil
}

// passTimeUntil lets simulated time pass, a millisecond at a time on every
// clock, until wg is done: an acquire of a free prefix waits for the
// service's clock to move on before it takes its epoch from it (see the
// lease package's "Epochs"), and simulated time moves only when told to.
func passTimeUntil(wg *sync.WaitGroup, clocks ...*clock.Fake) {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	for {
		select {
		case <-done:
			return
		case <-time.After(5 * time.Millisecond):
			for _, c := range clocks {
				c.Advance(time.Millisecond)
			}
		}
	}
}

// refused tells the story of an Acquire that found the lease held, and
// reports whether it was one.
func refused(s *story, in *instance, err error) bool {
	var held *lease.HeldError
	if !errors.As(err, &held) {
		return false
	}
	s.say(held.Now, in.name, fmt.Sprintf("refused: the lease is held by %s, renewed %v ago; it could be taken over at %s if %s stops renewing",
		held.Holder(), held.Now.Sub(held.Record.RenewedAt).Round(time.Second), at(held.TakeoverAt), held.Holder()))
	return true
}

// try has in attempt to take the lease, and tells what happened.
func try(ctx context.Context, s *story, in *instance) error {
	l, err := in.c.Acquire(ctx)
	if err == nil {
		in.l = l
		return nil
	}
	if refused(s, in, err) {
		return nil
	}
	return fmt.Errorf("demo: %s's acquire: %w", in.name, err)
}

// playAfterRace is the rest of the story: renewal, a partition, the fence,
// the takeover, the old holder's discovery.
func playAfterRace(ctx context.Context, s *story, h, c *instance, advanceTo func(time.Duration)) error {
	third := demoTTL / 3
	advanceTo(third) // 0:10
	if err := leaseseam.Renew(ctx, h.l); err != nil {
		return fmt.Errorf("demo: %s's renewal: %w", h.name, err)
	}
	if err := try(ctx, s, c); err != nil {
		return err
	}

	advanceTo(third + 5*time.Second) // 0:15
	h.net.down.Store(true)
	s.say(h.clock.Wall(), h.name, "is cut off from the bucket (a network partition, or a stalled VM): its renewals fail from now on")
	for _, t := range []time.Duration{2 * third, 2*third + 5*time.Second} { // 0:20, 0:25
		advanceTo(t)
		err := leaseseam.Renew(ctx, h.l)
		if err == nil || errors.Is(err, lease.ErrFenced) || errors.Is(err, lease.ErrLost) {
			return fmt.Errorf("demo: %s's renewal during the partition: %v, want a network error", h.name, err)
		}
		s.say(h.clock.Wall(), h.name, fmt.Sprintf("renewal failed: %v; it retries until its fence at %s", errUnreachable, at(h.l.Deadline())))
	}

	advanceTo(3 * third) // 0:30: the fence fires inside Advance
	if h.l.MayWrite() {
		return fmt.Errorf("demo: %s may still write at %s, after its fence deadline", h.name, at(h.clock.Wall()))
	}
	s.aside("MayWrite() is now false for %s: a write in flight is cancelled, no new one starts", h.name)

	advanceTo(3*third + 5*time.Second) // 0:35
	if err := try(ctx, s, c); err != nil {
		return err
	}
	if c.l != nil {
		return fmt.Errorf("demo: %s took the lease over at %s, before a whole TTL had passed", c.name, at(c.clock.Wall()))
	}

	advanceTo(4 * third) // 0:40
	if err := try(ctx, s, c); err != nil {
		return err
	}
	if c.l == nil || !c.l.MayWrite() {
		return fmt.Errorf("demo: %s did not take over a lease that was stale", c.name)
	}
	s.aside("%s may write now; %s stopped %v ago, so the two never wrote at once", c.name, h.name, third)

	advanceTo(4*third + 5*time.Second) // 0:45
	h.net.down.Store(false)
	s.say(h.clock.Wall(), h.name, "is back on the network and tries to renew")
	if err := leaseseam.Renew(ctx, h.l); !errors.Is(err, lease.ErrLost) {
		return fmt.Errorf("demo: %s's renewal after the takeover returned %v, want ErrLost", h.name, err)
	}
	s.aside("its Renew returned lease.ErrLost: %s must not write under this lease again", h.name)

	advanceTo(5 * third) // 0:50
	if err := c.l.Release(ctx); err != nil {
		return fmt.Errorf("demo: %s's release: %w", c.name, err)
	}
	fmt.Fprintf(s.w, `
At no moment could both write: %s stopped at %s, and %s started at %s.
Try it for real: "bucketlease hold file:///tmp/demo-lease" in two terminals.
`, h.name, at(demoStart.Add(3*third)), c.name, at(demoStart.Add(4*third)))
	return nil
}
