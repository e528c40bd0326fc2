package lease_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/clock"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/drivertest/faulty"
	"github.com/mushroomdb/bucketlease/lease"
)

// A service that allows one write per second to one key
// (R2, Cloud Storage) must not turn the acquire's own closely spaced
// writes into a wrong verdict: a refused probe, a lost lease, an
// ErrPreconditionsIgnored, a blocked prefix.

// running advances c by a step for every real half millisecond until the
// returned stop is called, so that code sleeping on c wakes and a rate
// limit on c's time passes, while requests sent together still meet at
// one instant of c.
func running(c *clock.Fake) (stop func()) {
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(500 * time.Microsecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				c.Advance(10 * time.Millisecond)
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// rateLimited returns a bucket that reports no service time and allows one
// write per second per key, declaring it if declare, and the limiter.
func rateLimited(c *clock.Fake, declare bool, inner driver.Bucket) (driver.Bucket, *faulty.RateLimit) {
	if inner == nil {
		inner = machineClocksOnly()
	}
	r := &faulty.RateLimit{Bucket: inner, Clock: c, RetryAfter: time.Second, Declare: declare}
	return r, r
}

func TestRateLimitedAcquireCreates(t *testing.T) {
	for _, declare := range []bool{true, false} {
		t.Run(map[bool]string{true: "declared", false: "undeclared"}[declare], func(t *testing.T) {
			c := clock.NewFake(t0)
			b, r := rateLimited(c, declare, nil)
			stop := running(c)
			l, err := lease.Acquire(context.Background(), bucket.New(b, "db1"), opts("a", c, nil))
			stop()
			if err != nil {
				t.Fatalf("acquire on a free key: %v (%d writes refused for their rate)", err, r.Refused())
			}
			if !l.MayWrite() {
				t.Fatal("the lease may not write")
			}
			if rec, _, ok := readRecord(t, b); !ok || rec.InstanceID != "a" || rec.TTLSeconds == 0 {
				t.Fatalf("stored %+v", rec)
			}
			if declare && r.Refused() != 0 {
				t.Errorf("%d writes were refused for their rate where the driver declares the interval; the acquire should space them", r.Refused())
			}
			if n := scratchLeft(t, b); n != 0 {
				t.Errorf("%d scratch keys left", n)
			}
		})
	}
}

func TestRateLimitedAcquireTakesOver(t *testing.T) {
	for _, declare := range []bool{true, false} {
		t.Run(map[bool]string{true: "declared", false: "undeclared"}[declare], func(t *testing.T) {
			c := clock.NewFake(t0)
			b, r := rateLimited(c, declare, nil)
			put(t, b, foreign("old", t0.Add(-2*ttl), 30))
			ev := &events{}
			stop := running(c)
			l, err := lease.Acquire(context.Background(), bucket.New(b, "db1"), opts("a", c, ev))
			stop()
			if err != nil {
				t.Fatalf("take over a stale lease: %v (%d writes refused for their rate)", err, r.Refused())
			}
			if !l.MayWrite() || !ev.has(lease.EventTookOver) {
				t.Fatalf("events %v", ev.kinds())
			}
			if declare && r.Refused() != 0 {
				t.Errorf("%d writes were refused for their rate where the driver declares the interval", r.Refused())
			}
		})
	}
}

// TestRateLimitedProbeStillProven: a 429 is not a 412. On a path that
// ignores If-None-Match on the lease object, behind a rate limit that
// refuses the probes sent right after the first write, the probes are
// sent again until the service answers them, and the acquire fails
// closed.
func TestRateLimitedProbeStillProven(t *testing.T) {
	c := clock.NewFake(t0)
	ignoring := &faulty.Bucket{Bucket: machineClocksOnly(), Ignore: faulty.IgnoreIfAbsent, Only: onLease}
	// The limit on the lease object alone, so that the scratch proof's
	// writes teach the acquire no spacing, and the probes sent right after
	// the first write are refused for their rate.
	r := &faulty.RateLimit{Bucket: ignoring, Clock: c, RetryAfter: time.Second, Only: onLease}
	var b driver.Bucket = r
	stop := running(c)
	_, err := lease.Acquire(context.Background(), bucket.New(b, "db1"), opts("a", c, nil))
	stop()
	// The If-None-Match probe itself must be the one found accepted: a
	// 429 on the write with If-Match on the current version, taken for a
	// refusal, fails the acquire with ErrPreconditionsIgnored too, for the
	// wrong reason.
	if !errors.Is(err, lease.ErrPreconditionsIgnored) || !contains(err.Error(), "accepted a write with If-None-Match: *") {
		t.Fatalf("acquire through a path that ignores If-None-Match on LEASE: %v, want ErrPreconditionsIgnored for the accepted If-None-Match probe (%d writes refused for their rate)", err, r.Refused())
	}
	if r.Refused() == 0 {
		t.Error("no write was refused for its rate: the test shows nothing")
	}
}

// TestRateLimitedRenewAndRelease: a renewal and a release sent within a
// second of the acquire's last write are sent again after the
// Retry-After, never taken for a lost lease or a failed release.
func TestRateLimitedRenewAndRelease(t *testing.T) {
	for _, declare := range []bool{true, false} {
		t.Run(map[bool]string{true: "declared", false: "undeclared"}[declare], func(t *testing.T) {
			c := clock.NewFake(t0)
			b, r := rateLimited(c, declare, nil)
			stop := running(c)
			defer stop()
			l, err := lease.Acquire(context.Background(), bucket.New(b, "db1"), opts("a", c, nil))
			if err != nil {
				t.Fatalf("acquire: %v", err)
			}
			if err := l.Renew(context.Background()); err != nil {
				t.Fatalf("renew right after the acquire: %v (%d writes refused for their rate)", err, r.Refused())
			}
			if err := l.Renew(context.Background()); err != nil {
				t.Fatalf("renew right after a renewal: %v", err)
			}
			if !l.MayWrite() {
				t.Fatal("fenced")
			}
			if err := l.Release(context.Background()); err != nil {
				t.Fatalf("release right after a renewal: %v", err)
			}
			if rec, _, ok := readRecord(t, b); !ok || rec.InstanceID != "a" || rec.TTLSeconds != 0 {
				t.Fatalf("stored %+v, want our record released", rec)
			}
		})
	}
}

// shiftedMono is a clock whose monotonic origin lies far in the future, so
// that its readings are negative: Clock allows any origin.
type shiftedMono struct{ *clock.Fake }

func (c shiftedMono) Mono() time.Duration { return c.Fake.Mono() - 1000*time.Hour }

// TestPacingOnAClockWithANegativeMonotonicReading: acquire, renewal and
// release write at once on a clock whose monotonic readings are negative
// (the system clock inside a testing/synctest bubble reads so, as the
// simulator found: Break's pacer waited 27 years for a key never written,
// taking a missing entry for the time 0).
func TestPacingOnAClockWithANegativeMonotonicReading(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := shiftedMono{clock.NewFake(t0)}
	l, err := lease.Acquire(ctx, bucket.New(machineClocksOnly(), "db1"), opts("a", c, nil))
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	c.Advance(ttl / 3)
	if err := l.Renew(ctx); err != nil {
		t.Fatalf("renew: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("release: %v", err)
	}
}

// TestTTLTooShortForAPacedService: on a driver that declares one write per
// key per second, a 3 s TTL (whose acquire could not finish its paced
// writes before its fence, and would leave the prefix blocked) is refused
// by NewContender, naming the shortest TTL that works; 9 s is accepted.
func TestTTLTooShortForAPacedService(t *testing.T) {
	b := &faulty.RateLimit{Bucket: machineClocksOnly(), Interval: time.Second, Declare: true, Clock: clock.NewFake(t0)}
	o := opts("a", clock.NewFake(t0), nil)
	o.TTL = 3 * time.Second
	_, err := lease.NewContender(bucket.New(b, "db1"), o)
	if err == nil || !strings.Contains(err.Error(), "use a TTL of at least 9s") {
		t.Fatalf("NewContender with TTL 3s on a paced service: %v", err)
	}
	o.TTL = 9 * time.Second
	if _, err := lease.NewContender(bucket.New(b, "db1"), o); err != nil {
		t.Fatalf("NewContender with TTL 9s: %v", err)
	}
}
