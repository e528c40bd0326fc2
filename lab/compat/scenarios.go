package compat

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/clock"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/drivertest/faulty"
	"github.com/mushroomdb/bucketlease/internal/leaseseam"
	"github.com/mushroomdb/bucketlease/internal/objects"
	"github.com/mushroomdb/bucketlease/lease"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// The lease scenarios run on each server, in order.
const (
	ScenarioRace          = "race-32"
	ScenarioTakeover      = "takeover"
	ScenarioFencedRelease = "fenced-release"
)

// ScenarioNames returns the names of the lease scenarios, in the order they
// run and appear in the table.
func ScenarioNames() []string {
	return []string{ScenarioRace, ScenarioTakeover, ScenarioFencedRelease}
}

// errBroken marks a scenario failure in which exclusion itself broke: two
// holders at once, a lease object naming someone other than the holder, an
// old holder that could still renew after a takeover, or a successor's lease
// changed by a fenced holder. Any other failure means the lease could not do
// its work there (it could not renew, release or take over) while nobody
// else got in.
var errBroken = errors.New("exclusion broken")

func broken(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errBroken}, args...)...)
}

// scenarioTTL is the lease TTL in the scenarios. Time is a fake clock per
// instance, so a takeover costs no waiting; the requests are real.
const scenarioTTL = 30 * time.Second

// leaseOptions are one scenario instance's options: its id, its clock (nil:
// the system clock), no log output, and the environment switch ignored.
func leaseOptions(id string, c clock.Clock) *lease.Options {
	if c == nil {
		c = clock.System{}
	}
	return leaseseam.With(&lease.Options{TTL: scenarioTTL, InstanceID: id, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, leaseseam.Seams{Clock: c, Getenv: func(string) string { return "" }})
}

// scenarios runs the lease scenarios on b under prefix.
func scenarios(ctx context.Context, b driver.Bucket, prefix string, opts Options) []ScenarioResult {
	run := func(name string, f func(context.Context, string) (string, error)) ScenarioResult {
		ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel()
		p := prefix + "/" + name + "-" + randomHex(3)
		defer b.Delete(context.WithoutCancel(ctx), admin.Key(p), driver.Condition{})
		detail, err := f(ctx, p)
		if errors.Is(err, lease.ErrPreconditionsIgnored) {
			return ScenarioResult{Name: name, FailedClosed: true, Detail: evidence(err.Error())}
		}
		if err != nil {
			return ScenarioResult{Name: name, Broken: errors.Is(err, errBroken), Detail: evidence(err.Error())}
		}
		return ScenarioResult{Name: name, Passed: true, Detail: detail}
	}
	return []ScenarioResult{
		run(ScenarioRace, func(ctx context.Context, p string) (string, error) {
			return race(ctx, b, p, opts.Racers, opts.Rounds)
		}),
		run(ScenarioTakeover, func(ctx context.Context, p string) (string, error) {
			return takeover(ctx, b, p)
		}),
		run(ScenarioFencedRelease, func(ctx context.Context, p string) (string, error) {
			return fencedRelease(ctx, b, p)
		}),
	}
}

// holder returns the instance the lease object names, failing unless it is
// a live (not released) record.
func holder(ctx context.Context, b driver.Bucket, prefix string) (string, driver.Version, error) {
	data, v, err := objects.ReadAll(ctx, b, admin.Key(prefix), admin.MaxRecordSize, driver.GetOptions{})
	if err != nil {
		return "", "", fmt.Errorf("reading the lease object: %w", err)
	}
	rec, err := admin.DecodeRecord(data)
	if err != nil {
		return "", "", fmt.Errorf("the lease object: %w", err)
	}
	if rec.TTLSeconds == 0 {
		return "", "", fmt.Errorf("the lease object is a released record of %q", rec.InstanceID)
	}
	return rec.InstanceID, v.Version, nil
}

// race starts n contenders at once on one free prefix, rounds times (a fresh
// prefix each round): exactly one may win each round, and the lease object
// must name it. Every loser should be refused with ErrHeld; other errors are
// reported in the detail (they keep nobody out wrongly, but a service that
// fails requests under contention is worth knowing about).
func race(ctx context.Context, b driver.Bucket, prefix string, n, rounds int) (string, error) {
	b = faulty.OnFakeClocks(b) // the racers' fake clocks never move: no waits between writes on them
	others := map[string]int{}
	held, ignored := 0, 0
	releaseErr := ""
	for round := range rounds {
		p := fmt.Sprintf("%s/round-%d", prefix, round)
		defer b.Delete(context.WithoutCancel(ctx), admin.Key(p), driver.Condition{})
		start := clock.NewFake(time.Now())
		var (
			mu      sync.Mutex
			winners []*lease.Lease
			wg      sync.WaitGroup
			ready   = make(chan struct{})
		)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-ready
				l, err := lease.Acquire(ctx, bucket.New(b, p), leaseOptions(fmt.Sprintf("racer-%02d", i), start))
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					winners = append(winners, l)
				case errors.Is(err, lease.ErrHeld):
					held++
				case errors.Is(err, lease.ErrPreconditionsIgnored):
					ignored++
				default:
					others[errorKind(err)]++
				}
			}()
		}
		close(ready)
		wg.Wait()
		ids := make([]string, len(winners))
		for i, w := range winners {
			ids[i] = w.InstanceID()
		}
		if len(winners) == 0 && ignored == n {
			return "", fmt.Errorf("round %d: all %d contenders: %w", round+1, n, lease.ErrPreconditionsIgnored)
		}
		if len(winners) > 1 {
			return "", broken("round %d: %d of %d contenders acquired the lease (%s); want exactly one%s",
				round+1, len(winners), n, strings.Join(ids, ", "), otherText(others, ignored))
		}
		if len(winners) == 0 {
			return "", fmt.Errorf("round %d: none of %d contenders acquired the lease; want exactly one%s",
				round+1, n, otherText(others, ignored))
		}
		id, _, err := holder(ctx, b, p)
		if err != nil {
			return "", fmt.Errorf("round %d: %w", round+1, err)
		}
		if id != ids[0] {
			return "", broken("round %d: %s won, but the lease object names %s", round+1, ids[0], id)
		}
		// The race is about winning; a failed release is shown, not
		// counted (the takeover and release scenarios test those).
		if err := winners[0].Release(ctx); err != nil && releaseErr == "" {
			releaseErr = "; the winner's release failed: " + evidence(err.Error())
		}
	}
	return fmt.Sprintf("%d rounds of %d: one winner each; %d refusals with ErrHeld%s%s", rounds, n, held, otherText(others, ignored), releaseErr), nil
}

// errorKind shortens an error to what identifies its kind, for counting.
func errorKind(err error) string {
	return evidence(err.Error())
}

func otherText(others map[string]int, ignored int) string {
	text := ""
	if ignored > 0 {
		text = fmt.Sprintf("; %d failed closed with ErrPreconditionsIgnored", ignored)
	}
	if len(others) == 0 {
		return text
	}
	keys := make([]string, 0, len(others))
	total := 0
	for k, n := range others {
		keys = append(keys, k)
		total += n
	}
	sort.Strings(keys)
	return text + fmt.Sprintf("; %d other errors, e.g. %q", total, keys[0])
}

// takeover: a holder stops renewing; after a TTL another instance takes the
// lease over, and the old holder's next renewal gets ErrLost.
func takeover(ctx context.Context, b driver.Bucket, prefix string) (string, error) {
	b = faulty.OnFakeClocks(b) // fake clocks move a TTL on without waiting one: the service's clock would rightly refuse that
	now := time.Now()
	oldClock, newClock := clock.NewFake(now), clock.NewFake(now)
	old, err := lease.Acquire(ctx, bucket.New(b, prefix), leaseOptions("old", oldClock))
	if err != nil {
		return "", fmt.Errorf("acquire: %w", err)
	}
	if _, err := lease.Acquire(ctx, bucket.New(b, prefix), leaseOptions("new", newClock)); !errors.Is(err, lease.ErrHeld) {
		return "", fmt.Errorf("a second instance before a TTL passed: %v; want ErrHeld", err)
	}
	oldClock.Advance(scenarioTTL)
	newClock.Advance(scenarioTTL)
	nl, err := lease.Acquire(ctx, bucket.New(b, prefix), leaseOptions("new", newClock))
	if err != nil {
		return "", fmt.Errorf("takeover after a TTL: %w", err)
	}
	defer nl.Release(ctx)
	if err := leaseseam.Renew(ctx, old); err == nil {
		return "", broken("the old holder renewed after the takeover; want ErrLost")
	} else if !errors.Is(err, lease.ErrLost) {
		return "", fmt.Errorf("the old holder's renewal after the takeover: %v; want ErrLost", err)
	}
	id, _, err := holder(ctx, b, prefix)
	if err != nil {
		return "", err
	}
	if id != "new" {
		return "", broken("after the takeover the lease object names %q, not the successor", id)
	}
	return "refused before a TTL; taken over after one; the old holder got ErrLost", nil
}

// fencedRelease: a holder is fenced (no renewal for its TTL), a successor
// takes over, then the fenced holder releases. Its release must leave the
// successor's lease in place: same object, same version, still renewable.
func fencedRelease(ctx context.Context, b driver.Bucket, prefix string) (string, error) {
	b = faulty.OnFakeClocks(b) // fake clocks move a TTL on without waiting one: the service's clock would rightly refuse that
	now := time.Now()
	oldClock, newClock := clock.NewFake(now), clock.NewFake(now)
	old, err := lease.Acquire(ctx, bucket.New(b, prefix), leaseOptions("old", oldClock))
	if err != nil {
		return "", fmt.Errorf("acquire: %w", err)
	}
	oldClock.Advance(scenarioTTL)
	newClock.Advance(scenarioTTL)
	if old.MayWrite() {
		return "", errors.New("the old holder may still write a TTL after its last renewal")
	}
	nl, err := lease.Acquire(ctx, bucket.New(b, prefix), leaseOptions("new", newClock))
	if err != nil {
		return "", fmt.Errorf("takeover: %w", err)
	}
	defer nl.Release(ctx)
	_, before, err := holder(ctx, b, prefix)
	if err != nil {
		return "", err
	}
	releaseErr := old.Release(ctx)
	id, after, err := holder(ctx, b, prefix)
	if err != nil {
		return "", broken("after the fenced holder's release (which returned %v): %v", releaseErr, err)
	}
	if id != "new" || after != before {
		return "", broken("the fenced holder's release (which returned %v) changed the successor's lease: it names %q, version %q → %q",
			releaseErr, id, before, after)
	}
	newClock.Advance(scenarioTTL / 3)
	if err := leaseseam.Renew(ctx, nl); err != nil {
		return "", fmt.Errorf("the successor's renewal after the fenced holder's release: %w", err)
	}
	if releaseErr != nil {
		return "the successor's lease stayed in place and renews; the fenced release returned: " + oneLine(releaseErr.Error()), nil
	}
	return "the successor's lease stayed in place and renews", nil
}
