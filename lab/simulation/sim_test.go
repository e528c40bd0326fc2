package simulation

import (
	"crypto/sha256"
	"flag"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mushroomdb/bucketlease/lab/chaos/register"
)

var (
	seedFlag    = flag.Int64("seed", -1, "replay one seed and print its trace")
	seedsFlag   = flag.Int("sim.seeds", 200, "how many seeds TestSimulation runs")
	firstFlag   = flag.Uint64("sim.first", 1, "the first seed TestSimulation runs")
	campaign    = flag.Bool("sim.campaign", false, "run -sim.seeds seeds in parallel and print a summary")
	budget      = flag.Duration("sim.timeout", 0, "with -sim.campaign, stop starting seeds after this long (0: no limit)")
	traceAll    = flag.Bool("sim.trace", false, "with -seed, print the whole trace even when the seed passes")
	replayFirst = flag.Uint64("sim.replayfirst", 1, "the first seed TestReplayExact runs")
	replayN     = flag.Int("sim.replayn", 0, "how many seeds TestReplayExact runs (0: its default)")
	excludeFlag = flag.String("sim.exclude", "", "TestSimulation: comma-separated deviation classes to leave out (e.g. wall-clock-back-an-hour)")
	sibLate     = flag.Bool("sim.siblinglate", false, "TestSimulation: a process started beside another makes its first Acquire a TTL later (Config.siblingContendsLate)")
	noSvcTime   = flag.Bool("sim.noservicetime", false, "TestSimulation: the store reports no service time (Config.NoServiceTime)")
	forceFlag   = flag.String("sim.force", "", "TestSimulation: comma-separated deviation classes on in every seed, and no other (e.g. clock-wrong-from-start)")
	classSeeds  = flag.Int("sim.classseeds", classSeedsDefault, "how many seeds TestRound3ClassesHold runs per class")
	skewFlag    = flag.Duration("sim.skew", 0, "TestSimulation's clock-skew envelope (default a third of the TTL); beyond TTL/3 violations are expected")
)

// replayHint is how to replay a seed.
func replayHint(seed uint64, extra string) string {
	return fmt.Sprintf("replay: go test ./lab/simulation -run '%s' -seed=%d -v", extra, seed)
}

// run runs one seed in a synctest bubble of its own, as Run requires.
func run(t *testing.T, cfg Config) Result {
	t.Helper()
	var r Result
	synctest.Test(t, func(*testing.T) { r = Run(cfg) })
	return r
}

// report fails t with the violation and the tail of the seed's trace,
// obtained by running the seed again (runs are deterministic).
func report(t *testing.T, cfg Config, r Result, testName string) {
	t.Helper()
	cfg.Seed, cfg.Trace = r.Seed, true
	again := run(t, cfg)
	tail := again.Trace
	if len(tail) > 150 {
		tail = tail[len(tail)-150:]
	}
	t.Errorf("seed %d: %v\n%s\n(last %d trace lines of the replay)\n%s", r.Seed, r.Violation,
		replayHint(r.Seed, testName), len(tail), strings.Join(tail, "\n"))
}

// TestSimulation runs the lease under faults with skew up to a third of a
// TTL on a conditional store, and requires every invariant to hold.
func TestSimulation(t *testing.T) {
	cfg := Config{MaxSkew: *skewFlag, Exclude: parseDeviations(t, *excludeFlag), Force: parseDeviations(t, *forceFlag), NoServiceTime: *noSvcTime}
	cfg.siblingContendsLate = *sibLate
	if *seedFlag >= 0 {
		cfg.Seed, cfg.Trace = uint64(*seedFlag), true
		r := run(t, cfg)
		if r.Violation != nil || *traceAll || testing.Verbose() {
			t.Log("\n" + strings.Join(r.Trace, "\n"))
		}
		t.Logf("seed %d: %s", r.Seed, summary([]Result{r}))
		if r.Violation != nil {
			t.Fatalf("seed %d: %v", r.Seed, r.Violation)
		}
		return
	}
	if *campaign {
		runCampaign(t, cfg)
		return
	}
	results := runSeeds(t, *firstFlag, *seedsFlag, cfg, 0, 1)
	for _, r := range results {
		if r.Violation != nil {
			report(t, cfg, r, simTestName())
			return
		}
	}
	t.Logf("%d seeds: %s", len(results), summary(results))
	checkCoverage(t, results)
}

// simTestName is TestSimulation's -run pattern for a replay hint, with
// the flags that chose its world.
func simTestName() string {
	name := "TestSimulation$"
	if *forceFlag != "" {
		name += "' -sim.force='" + *forceFlag
	}
	if *excludeFlag != "" {
		name += "' -sim.exclude='" + *excludeFlag
	}
	if *noSvcTime {
		name += "' -sim.noservicetime='true"
	}
	if *sibLate {
		name += "' -sim.siblinglate='true"
	}
	return name
}

// checkCoverage fails if a fault kind never happened: a simulator that
// injects nothing proves nothing.
func checkCoverage(t *testing.T, results []Result) {
	t.Helper()
	total := map[string]int{}
	for _, r := range results {
		for k, n := range r.Faults {
			total[k] += n
		}
	}
	for _, k := range []string{"request-dropped", "reply-lost", "reply-lost-retry-refused", "server-error", "delayed",
		"partitioned-request", "partition", "suspend", "paused-after-fence-check", "crash-restart-same-id",
		"crash-restart-new-id", "wall-jump-forward", "wall-jump-backward", "release-and-leave",
		"twins", "restart-while-running", "release-old-lease", "release-during-hung-renewal", "stuck-wall-clock",
		"store-ignores-delete-condition", "store-deletes-missing-ok", "store-if-match-missing-creates", "coarse-wall-clock",
		"path-drops-if-none-match", "path-dropped-if-none-match", "break-drops-if-match", "break-path-dropped-if-match",
		"slow-write-outlives-release", "wall-clock-back-an-hour", "clock-wrong-from-start", "lease-deleted-after-release"} {
		if total[k] == 0 {
			t.Errorf("no %s fault in %d seeds", k, len(results))
		}
	}
}

// runSeeds runs n seeds from first on all CPUs, stopping early after
// stopAt violations or once budget has passed. Seeds are handed out in
// order and every seed started is finished, so the seeds run are always
// first to first+len(results)-1.
func runSeeds(t *testing.T, first uint64, n int, cfg Config, budget time.Duration, stopAt int) []Result {
	var (
		next    atomic.Uint64
		failed  atomic.Int64
		mu      sync.Mutex
		results []Result
		wg      sync.WaitGroup
	)
	start := time.Now()
	next.Store(first)
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for failed.Load() < int64(stopAt) && (budget == 0 || time.Since(start) < budget) {
				seed := next.Add(1) - 1
				if seed >= first+uint64(n) {
					return
				}
				c := cfg
				c.Seed = seed
				r := run(t, c)
				if r.Violation != nil {
					failed.Add(1)
				}
				mu.Lock()
				results = append(results, r)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sort.Slice(results, func(i, j int) bool { return results[i].Seed < results[j].Seed })
	return results
}

// summary renders what a set of runs found.
func summary(results []Result) string {
	ttl := 30 * time.Second
	if len(results) > 0 {
		ttl = results[0].TTL
	}
	faults := map[string]int{}
	var (
		worst    time.Duration
		drills   int
		viol     int
		acq      int
		backups  int
		simTime  time.Duration
		bound    time.Duration
		worstFor uint64
		clock    [3]int // acquires refused with ErrClock, of those on a clock wrong from the start, renewals fenced with it
	)
	for _, r := range results {
		for k, n := range r.Faults {
			faults[k] += n
		}
		for _, d := range r.Takeovers {
			drills++
			if d > worst {
				worst, worstFor = d, r.Seed
			}
		}
		if r.Violation != nil {
			viol++
		}
		acq += r.Acquisitions
		clock[0] += r.ClockRefused
		clock[1] += r.WrongClockRefused
		clock[2] += r.ClockFenced
		backups += r.Backups
		simTime += r.SimTime
		bound = r.Bound
	}
	keys := make([]string, 0, len(faults))
	for k := range faults {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var sb strings.Builder
	fmt.Fprintf(&sb, "seeds %d, violations %d, simulated time %v, lease acquisitions %d, backups committed %d\n",
		len(results), viol, simTime.Round(time.Second), acq, backups)
	fmt.Fprintf(&sb, "takeover drills %d, worst takeover %v = %.2f TTL (seed %d), bound %v = %.2f TTL\n",
		drills, worst, float64(worst)/float64(ttl), worstFor, bound, float64(bound)/float64(ttl))
	fmt.Fprintf(&sb, "ErrClock: acquires refused %d (%d on a clock wrong from the start), renewals fenced %d\n", clock[0], clock[1], clock[2])
	sb.WriteString("faults injected:")
	for _, k := range keys {
		fmt.Fprintf(&sb, " %s=%d", k, faults[k])
	}
	return sb.String()
}

// campaignStopAt is how many violations end a campaign early: one
// violation does not waste the rest of a long budget, and each is listed.
const campaignStopAt = 20

func runCampaign(t *testing.T, cfg Config) {
	start := time.Now()
	results := runSeeds(t, *firstFlag, *seedsFlag, cfg, *budget, campaignStopAt)
	fmt.Printf("campaign %s: seeds %d..%d requested, %d run (seeds %d..%d) in %v on %d CPUs\n%s\n",
		time.Now().UTC().Format("2006-01-02"), *firstFlag, *firstFlag+uint64(*seedsFlag)-1, len(results),
		*firstFlag, *firstFlag+uint64(len(results))-1,
		time.Since(start).Round(time.Second), runtime.GOMAXPROCS(0), summary(results))
	var first *Result
	for i, r := range results {
		if r.Violation != nil {
			fmt.Printf("violation: seed %d: %v\n", r.Seed, r.Violation)
			if first == nil {
				first = &results[i]
			}
		}
	}
	if first != nil {
		report(t, cfg, *first, simTestName())
	}
}

// TestReplayExact runs replaySeeds seeds twice, each with its full trace,
// and requires every seed's two traces, fault counts and results to hash
// the same: a run is a pure function of its seed, whatever the Go scheduler
// does with the lease's goroutines (and the two passes run the seeds on
// different goroutines, in parallel with different neighbours).
func TestReplayExact(t *testing.T) {
	n := replaySeeds
	if testing.Short() {
		n = 100
	}
	if *replayN > 0 {
		n = *replayN
	}
	cfg := Config{Trace: true}
	first, lines := fingerprints(t, *replayFirst, n, cfg, nil)
	second, _ := fingerprints(t, *replayFirst, n, cfg, first)
	for i := range first {
		a, b := first[i], second[i]
		if a.sum == b.sum {
			continue
		}
		j := 0
		for j < min(len(a.lines), len(b.lines)) && a.lines[j] == b.lines[j] {
			j++
		}
		t.Errorf("seed %d: the two runs differ from trace line %d on (%d and %d lines); the second run's lines around it:\n%s",
			*replayFirst+uint64(i), j, len(a.lines), len(b.lines), strings.Join(b.trace[max(0, j-15):min(len(b.trace), j+3)], "\n"))
	}
	if lines < 100*n {
		t.Fatalf("%d trace lines in %d seeds: the traces record too little to compare", lines, n)
	}
	t.Logf("%d seeds run twice: identical (%d trace lines each time)", n, lines)
}

// replay is what TestReplayExact keeps of a run: its fingerprint, a hash
// per trace line, and the trace itself when it differs from the first run.
type replay struct {
	sum   [32]byte
	lines []uint64
	trace []string
}

// fingerprints runs n seeds from first on all CPUs and returns what each
// one left (index seed-first) and the number of trace lines in all; with
// against, the traces of the seeds whose fingerprint differs are kept.
func fingerprints(t *testing.T, first uint64, n int, cfg Config, against []replay) ([]replay, int) {
	out := make([]replay, n)
	var (
		next  atomic.Int64
		lines atomic.Int64
		wg    sync.WaitGroup
	)
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				c := cfg
				c.Seed = first + uint64(i)
				r := run(t, c)
				lines.Add(int64(len(r.Trace)))
				rp := replay{sum: fingerprint(r), lines: make([]uint64, len(r.Trace))}
				for j, l := range r.Trace {
					rp.lines[j] = hash(l)
				}
				if against != nil && against[i].sum != rp.sum {
					rp.trace = r.Trace
				}
				out[i] = rp
			}
		}()
	}
	wg.Wait()
	return out, int(lines.Load())
}

// fingerprint hashes everything a run reports.
func fingerprint(r Result) [32]byte {
	h := sha256.New()
	for _, l := range r.Trace {
		h.Write([]byte(l))
		h.Write([]byte{'\n'})
	}
	keys := make([]string, 0, len(r.Faults))
	for k := range r.Faults {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(h, "%s=%d\n", k, r.Faults[k])
	}
	fmt.Fprintf(h, "%v %v %d %d %v %d %d %d %v %v", r.Violation, r.Takeovers, r.Acquisitions, r.Backups, r.SimTime,
		r.ClockRefused, r.WrongClockRefused, r.ClockFenced, r.Resolution, r.WrongClock)
	return [32]byte(h.Sum(nil))
}

// TestDeterministic runs seeds twice and requires identical traces, the
// lease's probe goroutines notwithstanding.
func TestDeterministic(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		a := run(t, Config{Seed: seed, Trace: true, Rounds: 1})
		b := run(t, Config{Seed: seed, Trace: true, Rounds: 1})
		if len(a.Trace) == 0 || !slices.Equal(a.Trace, b.Trace) {
			for i := range min(len(a.Trace), len(b.Trace)) {
				if a.Trace[i] != b.Trace[i] {
					t.Fatalf("seed %d: traces differ at line %d:\n%s\n%s", seed, i, a.Trace[i], b.Trace[i])
				}
			}
			t.Fatalf("seed %d: traces differ in length: %d and %d", seed, len(a.Trace), len(b.Trace))
		}
	}
}

// negative runs seeds of cfg until one violates want, and fails if none
// does within n seeds: a check that cannot fail proves nothing.
func negative(t *testing.T, cfg Config, want string, n int) {
	t.Helper()
	if *seedFlag >= 0 {
		cfg.Seed, cfg.Trace = uint64(*seedFlag), true
		r := run(t, cfg)
		t.Log("\n" + strings.Join(r.Trace, "\n"))
		t.Logf("seed %d: %v", r.Seed, r.Violation)
		return
	}
	results := runSeeds(t, 1, n, cfg, 0, 1)
	for _, r := range results {
		if r.Violation != nil {
			if r.Violation.Invariant != want {
				report(t, cfg, r, t.Name()+"$")
				t.Fatalf("found a %s violation, want %s", r.Violation.Invariant, want)
			}
			t.Logf("seed %d found it: %v", r.Seed, r.Violation)
			return
		}
	}
	t.Fatalf("no %s violation in %d seeds", want, n)
}

// Skew beyond a third of a TTL: a contender whose clock runs ahead takes
// over while the holder may still write.
func TestNegativeSkewBeyondAThirdOfTTL(t *testing.T) {
	negative(t, Config{MaxSkew: 30 * time.Second * 2 / 3, Exclude: round3}, InvExclusion, 40)
}

// A store that ignores preconditions on the worker's keys (but honours them
// on LEASE, so the probe passes): a stale holder's late LATEST lands over a
// successor's.
func TestNegativeStoreIgnoresDataPreconditions(t *testing.T) {
	negative(t, Config{Store: IgnoresDataPreconditions, Exclude: round3}, InvLatest, 60)
}

// A worker that ignores MayWrite: it writes while a successor holds the
// lease.
func TestNegativeWorkerIgnoresFence(t *testing.T) {
	negative(t, Config{WorkerIgnoresFence: true, Exclude: round3}, InvExclusion, 40)
}

// TestCampaignFindings replays the seeds on which campaigns found a bug,
// in the lease or in the simulator itself, so that none comes back: 231
// (a same-id record taken back before it was stale, unsafe with a suspended
// writer), 13930 and 300021 (a takeover drill that cut off the wrong one of
// two processes with one id: the stored version was written by the other,
// whose renewal's reply was lost); the simulator that found those did not
// replay exactly, so here they are three more seeds of the present one.
// 13930 also finds: with wall-clock-back-an-hour, a holder fenced by
// its clock stepping back re-acquires its own record at once and stamps
// renewed_at from the stepped-back clock, so readers take over while it
// writes. 168589: an acquire read the key
// free, and its first write, If-None-Match: * on the lease object, was
// delayed while another instance acquired and landed with the header
// dropped by its path, whose later probes kept it: two holders (the lease
// proves the path on a scratch key before that write; TestFixedDefects
// replays it, and mutant acquire-first-write-before-proof brings the other
// order back).
// 131217, 161103, 194422 and 208086 found an error of the simulator's own:
// dropping If-None-Match from the worker's data writes too, which lets a
// paused stale writer overwrite LATEST whatever the lease does.
func TestCampaignFindings(t *testing.T) {
	for _, seed := range []uint64{231, 13930, 300021, 131217, 161103, 168589, 194422, 208086, 573688, 96458} {
		r := run(t, Config{Seed: seed})
		if r.Violation != nil {
			report(t, Config{}, r, "TestSimulation$")
		}
	}
}

// Seed 573688 of a campaign ran in a world that cannot exist: a
// process started beside another on its machine went on running while the
// old one's pause froze the machine, so its monotonic clock stood still
// for 38 s while it held the lease. Its fence (timed on that clock) never
// cancelled its delayed retention delete, which landed after a successor
// had named the chunk: an integrity violation that no real process could
// produce. With that world restored the simulator's own check must object.
// Seed 573688 takes another course on the present lease (an acquire of a
// free key waits for the service's clock to move on), so the test replays
// seed 25, the first in which that world shows (A2 sends a read at
// t=31.75s while its machine is frozen).
func TestNegativeSiblingRunsWhileFrozen(t *testing.T) {
	r := run(t, Config{Seed: 25, siblingsRunWhileFrozen: true})
	if r.Violation == nil || r.Violation.Invariant != InvWorld {
		t.Fatalf("seed 25 with siblings running on a frozen machine: %v, want a %s violation", r.Violation, InvWorld)
	}
	t.Log(r.Violation)
}

// fixedDefects are the lease's fixed defects that the simulator found or
// was shown to find, each with the world it shows in: a deviation class
// forced in seeds 1 to seeds, or one campaign seed. TestFixedDefects runs
// each world on the present lease, where no invariant may break, and a
// mutant in lab/mutate/mutants.txt brings the defect back into a scratch
// copy of the lease, where this test must fail. found is the first seed on
// which the defect broke invariant want (measured on 7a1ec1a with the
// defect switched on in the lease), or, where epochs changed the seeds'
// courses, the first the mutant breaks.
var fixedDefects = []struct {
	name  string // the defect: the mutant that brings it back is sim-NAME (but see above)
	cfg   Config
	seeds int    // run seeds 1 to seeds of cfg's class, or
	seed  uint64 // this one seed
	found uint64
	want  string
}{
	// A store that ignores the condition on DELETE, and a release that
	// trusts the driver's declaration of a conditional delete: a fenced
	// holder's release deletes its successor's lease.
	{name: "release-deletes", cfg: Config{Force: StoreIgnoresDeleteCondition | ReleaseOldLease}, seeds: 200, found: 1, want: InvExclusion},
	// Two live processes configured with one id, and a lease that adopts
	// any record naming its id: both write.
	{name: "twins-adopt-by-id", cfg: Config{Force: Twins}, seeds: 100, found: 1, want: InvExclusion},
	// A restart with the same id while the old process still runs,
	// adopting by id: both write.
	{name: "restart-adopts-by-id", cfg: Config{Force: RestartWhileRunning}, seeds: 300, found: 2, want: InvExclusion},
	// Re-acquire after a fence, then release the old lease, with the
	// release adopting records by id: the re-acquired lease is released
	// under its holder, and another instance takes it while it writes.
	{name: "release-old-lease-adopts-by-id", cfg: Config{Force: ReleaseOldLease}, seeds: 300, found: 3, want: InvExclusion},
	// Release during a hung renewal, waiting for the renewal before it
	// stops writing.
	{name: "release-waits-for-hung-renewal", cfg: Config{Force: ReleaseDuringHungRenewal}, seeds: 100, found: 1, want: InvRelease},
	// Whole-second wall clocks and two processes with one id, with an
	// equal renewed_at taken as proof that a write was ours: one adopts
	// the other's lease, and both write.
	{name: "equal-renewed-at-is-proof", cfg: Config{Force: CoarseWallClock | Twins}, seeds: 300, found: 198, want: InvExclusion},
	// A path that drops If-None-Match, and an acquire whose first write
	// is an unproven If-None-Match on the lease object (and whose refused
	// clean-up marks the record released): a live holder's lease is
	// overwritten.
	{name: "unproven-first-write", cfg: Config{Force: PathDropsIfNoneMatch}, seeds: 200, found: 4, want: InvExclusion},
	// An acquire whose first write to the lease object goes out before
	// the path is proven: the write, delayed, lands with its header
	// dropped over a lease created meanwhile (found as campaign seed
	// 168589). On the present lease that seed takes another course, and
	// the class alone reaches a free key too seldom (30,000 seeds
	// clean); with LEASE deleted after each release the key is free
	// often, and the mutant's campaign broke exclusion on seeds 10877 and
	// 11061 of 13,465 (B's create, sent at t=3m32s and delayed 6 s, lands
	// over the lease C created at t=3m27s; B holds at t=3m38.25s).
	{name: "first-write-before-proof", cfg: Config{Force: PathDropsIfNoneMatch | LeaseDeletedAfterRelease}, seed: 10877, found: 10877, want: InvExclusion},
	// An operator's Break of a version it looked at earlier, through a
	// path that drops If-Match, sending its write beside the
	// made-up-version probe: it overwrites the lease a successor took
	// meanwhile.
	{name: "break-without-read", cfg: Config{Force: BreakDropsIfMatch}, seeds: 300, found: 15, want: InvExclusion},
	// A shutdown during a slow write through Lease.Bucket, with a Release
	// that does not wait for the writes it cancelled: the write lands
	// after Release returned, when a successor may hold the lease.
	{name: "release-does-not-wait", cfg: Config{Force: SlowWriteOutlivesRelease}, seeds: 200, found: 1, want: InvRelease},
	// The holder's wall clock steps back an hour, and it keeps stamping
	// renewed_at as its previous stamp plus a nanosecond: readers see the
	// lease age while it is renewed, and take it over while it writes.
	{name: "stamp-through-clock-jump", cfg: Config{Force: WallClockBackAnHour}, seeds: 200, found: 1, want: InvExclusion},
	// A process started beside the holder on its machine (campaign seed
	// 96458) has stamped nothing yet when the machine's
	// wall clock steps back an hour. A contender that checks its clock
	// only against the records it stamped takes over with a record
	// stamped an hour in the past, which another contender takes over at
	// once: two writers. In the simulator's own world a sibling makes its
	// first attempt in the tick it starts, and every attempt's stamp
	// counts as stamped, so the step is always seen against that stamp;
	// and the store's time refuses a clock an hour off. So the world is
	// the one where the check is all there is: no service time, and a
	// sibling whose first Acquire comes a TTL after it made its Contender
	// (siblingContendsLate). The mutant's campaign there broke exclusion
	// first on seed 444 (13 of 12,357 seeds).
	{name: "contender-trusts-its-clock", cfg: Config{Force: WallClockBackAnHour | RestartWhileRunning, NoServiceTime: true, siblingContendsLate: true},
		seed: 444, found: 444, want: InvExclusion},
	// A process restarted beside its still-running (or stopped)
	// predecessor on one machine, with a state directory whose lock is
	// not honoured: the restart adopts the predecessor's lease while the
	// predecessor writes.
	{name: "state-ignores-lock", cfg: Config{Force: StateDirectory | RestartWhileRunning}, seeds: 300, found: 2, want: InvExclusion},
	// One machine's wall clock wrong from the start by three TTLs to a
	// day, with the defect: no offset measured against the
	// service's clock at acquire, and records judged on the reader's
	// clock alone. A contender ahead takes a live lease over at once (seed
	// 1: B, 30m24s ahead, takes A's lease at t=250ms: exclusion); one
	// behind acquires a free key and stamps records that look old.
	// Measured on 6192588 by removing both rules in a scratch copy:
	// violations in each of the first 21 seeds (exclusion or clock; with
	// the clock invariant off, exclusion in 21 of the first 23). The
	// mutant sim-clock-wrong-from-start brings that back;
	// sim-acquire-ignores-clock-offset removes the acquire's refusal only,
	// which the clock invariant catches (seed 1: B holds at t=5m29.75s),
	// though exclusion then holds on the service's rule and the
	// renewal's fence (seeds 1 to 1,000 with the invariant off).
	{name: "clock-wrong-from-start", cfg: Config{Force: ClockWrongFromStart}, seeds: 200, found: 1, want: InvExclusion},
	// An epoch taken from the machine's clock rather than the service's
	// orders holders across a delete of the LEASE object only as far as
	// their clocks agree: within the skew envelope, a holder behind takes
	// a smaller epoch than its predecessor's (seed 218, since creates
	// settle their epoch after the write: A-1's record at t=35.75s, 1.7 s
	// under the one before). Mutant sim-epoch-from-machine-clock.
	{name: "epoch-from-machine-clock", cfg: Config{Force: LeaseDeletedAfterRelease}, seeds: 300, found: 218, want: InvEpoch},
	// A create that wrote its epoch, taken from its read, in its first
	// write: A read the free key at t=0.5s and its write was delayed 2.75
	// s, in which B acquired, released and had its record deleted; A's
	// record then landed with an epoch under B's. Found by the per-change
	// run of 50,000 seeds (also 21264, 22638, 24956, 41767). Mutant
	// sim-epoch-in-first-write.
	{name: "epoch-in-first-write", seed: 19632, found: 19632, want: InvEpoch},
}

// TestFixedDefects runs the world of each of the lease's fixed defects
// (fixedDefects) on the present lease: no invariant may break. Replay a seed
// of one with go test ./lab/simulation -run 'TestFixedDefects/NAME$'
// -seed=N -v.
func TestFixedDefects(t *testing.T) {
	for _, d := range fixedDefects {
		t.Run(d.name, func(t *testing.T) {
			defer func() {
				if t.Failed() {
					t.Logf("the old behaviour, when it was a switch, broke %s first on seed %d", d.want, d.found)
				}
			}()
			cfg := d.cfg
			switch {
			case *seedFlag >= 0:
				cfg.Seed, cfg.Trace = uint64(*seedFlag), true
				r := run(t, cfg)
				t.Log("\n" + strings.Join(r.Trace, "\n"))
				if r.Violation != nil {
					t.Fatalf("seed %d: %v", r.Seed, r.Violation)
				}
			case d.seed != 0:
				cfg.Seed = d.seed
				if r := run(t, cfg); r.Violation != nil {
					report(t, cfg, r, t.Name()+"$")
				}
			default:
				n := d.seeds
				if fixedSeedsCap > 0 {
					n = min(n, max(int(d.found), fixedSeedsCap))
				}
				results := runSeeds(t, 1, n, cfg, 0, 1)
				for _, r := range results {
					if r.Violation != nil {
						report(t, cfg, r, t.Name()+"$")
						return
					}
				}
				t.Logf("%d seeds: %s", len(results), summary(results))
			}
		})
	}
}

// TestRound3ClassesHold runs each class of round3 alone, certain in every
// seed, on the present lease: no violation, and the class's fault happened.
func TestRound3ClassesHold(t *testing.T) {
	for _, c := range []struct {
		dev   Deviation
		fault string
	}{
		{PathDropsIfNoneMatch, "path-dropped-if-none-match"},
		{BreakDropsIfMatch, "break-path-dropped-if-match"},
		{SlowWriteOutlivesRelease, "slow-write-outlives-release"},
		{WallClockBackAnHour, "wall-clock-back-an-hour"},
	} {
		t.Run(c.dev.String(), func(t *testing.T) {
			cfg := Config{Force: c.dev}
			results := runSeeds(t, 1, *classSeeds, cfg, 0, 1)
			for _, r := range results {
				if r.Violation != nil {
					report(t, cfg, r, "TestRound3ClassesHold/"+c.dev.String()+"$")
					return
				}
			}
			n := 0
			for _, r := range results {
				n += r.Faults[c.fault]
			}
			if n == 0 {
				t.Fatalf("no %s in %d seeds", c.fault, len(results))
			}
			t.Logf("%d seeds, %d %s: %s", len(results), n, c.fault, summary(results))
		})
	}
}

// TestClockWrongFromStart runs the clock-wrong-from-start class alone, in
// every seed, on the present lease: no violation (the clock invariant among
// them: the machine whose clock is wrong never holds the lease), and in
// every seed the lease refused that machine's acquires with ErrClock;
// over the seeds, clocks ahead and behind, and every resolution of the
// service's clock, occurred.
func TestClockWrongFromStart(t *testing.T) {
	cfg := Config{Force: ClockWrongFromStart}
	results := runSeeds(t, 1, *classSeeds, cfg, 0, 1)
	ahead, behind := 0, 0
	res := map[time.Duration]int{}
	for _, r := range results {
		if r.Violation != nil {
			report(t, cfg, r, "TestClockWrongFromStart$")
			return
		}
		if r.Faults["clock-wrong-from-start"] != 1 || r.WrongClockRefused == 0 {
			t.Errorf("seed %d: %d machines with a clock wrong from the start, %d acquires refused with ErrClock on one; want 1 and some",
				r.Seed, r.Faults["clock-wrong-from-start"], r.WrongClockRefused)
		}
		res[r.Resolution]++
		if r.WrongClock > 0 {
			ahead++
		} else {
			behind++
		}
	}
	if ahead == 0 || behind == 0 || len(res) < 3 {
		t.Errorf("%d seeds: %d clocks ahead, %d behind, resolutions %v: the class does not cover both signs and every resolution", len(results), ahead, behind, res)
	}
	t.Logf("%d seeds (%d clocks ahead, %d behind; resolutions %v): %s", len(results), ahead, behind, res, summary(results))
}

// TestNoServiceTime runs seeds with Config.NoServiceTime and again without
// it: with it no answer tells the lease the store's clock, the two classes
// only that clock can show (clock-wrong-from-start,
// lease-deleted-after-release) are left out, and no invariant breaks;
// without it every seed's answers carry the store's clock, and both
// classes occur in some of the same seeds.
func TestNoServiceTime(t *testing.T) {
	const seeds = 60
	blind := Config{NoServiceTime: true}
	classes := []string{"clock-wrong-from-start", "lease-deleted-after-release"}
	seen := map[string]int{}
	for _, r := range runSeeds(t, 1, seeds, blind, 0, 1) {
		if r.Violation != nil {
			report(t, blind, r, "TestNoServiceTime$")
			return
		}
		if r.ServiceTimes != 0 {
			t.Errorf("seed %d with NoServiceTime: %d answers told the store's clock, want none", r.Seed, r.ServiceTimes)
		}
		for _, c := range classes {
			seen[c] += r.Faults[c]
		}
	}
	for _, c := range classes {
		if seen[c] != 0 {
			t.Errorf("with NoServiceTime, %d %s faults in %d seeds, want none", seen[c], c, seeds)
		}
	}
	clear(seen)
	for _, r := range runSeeds(t, 1, seeds, Config{}, 0, seeds) {
		if r.ServiceTimes == 0 {
			t.Errorf("seed %d without NoServiceTime: no answer told the store's clock", r.Seed)
		}
		for _, c := range classes {
			seen[c] += r.Faults[c]
		}
	}
	for _, c := range classes {
		if seen[c] == 0 {
			t.Errorf("without NoServiceTime, no %s in %d seeds: the check above proves nothing", c, seeds)
		}
	}
}

// TestLeaseHistoryLinearizable checks the simulated store's LEASE history,
// as its clients saw it (a reply the fault model withholds or falsifies
// counts as unknown), for linearizability against a compare-and-swap
// register with Porcupine; and that the check fails on a history with one
// refusal turned into a success.
func TestLeaseHistoryLinearizable(t *testing.T) {
	lied := false
	for seed := uint64(1); seed <= 30; seed++ {
		r := run(t, Config{Seed: seed, History: true})
		if r.Violation != nil {
			continue // TestSimulation reports it
		}
		if len(r.LeaseOps) < 50 {
			t.Fatalf("seed %d: only %d LEASE requests in the history", seed, len(r.LeaseOps))
		}
		if res := register.Check(r.LeaseOps, time.Minute); !res.Linearizable {
			t.Fatalf("seed %d: the LEASE history (%d requests) is not linearizable (timed out: %v)", seed, res.Ops, res.TimedOut)
		}
		// The negative control: one refused create reported as a success.
		ops := slices.Clone(r.LeaseOps)
		for i, op := range ops {
			if op.Kind == register.Put && op.Cond == register.Absent && op.Status == register.Refused {
				ops[i].Status, ops[i].OutVer = register.OK, "lie"
				if register.Check(ops, time.Minute).Linearizable {
					t.Fatalf("seed %d: a refused If-None-Match PUT reported as a success went unnoticed", seed)
				}
				lied = true
				break
			}
		}
	}
	if !lied {
		t.Fatal("no refused If-None-Match PUT to lie about in 30 seeds")
	}
}

// parseDeviations reads comma-separated class names.
func parseDeviations(t *testing.T, names string) Deviation {
	var d Deviation
	for _, n := range strings.Split(names, ",") {
		if n == "" {
			continue
		}
		i := slices.Index(deviationNames, n)
		if i < 0 {
			t.Fatalf("no deviation class %q; the classes: %s", n, strings.Join(deviationNames, ", "))
		}
		d |= 1 << i
	}
	return d
}

// The state directory's classes on, with the lock honoured: restarts adopt
// their own leases, twins and running predecessors do not.
func TestStateDirectory(t *testing.T) {
	for _, force := range []Deviation{StateDirectory | RestartWhileRunning, StateDirectory | Twins, StateDirectory} {
		results := runSeeds(t, 1, *classSeeds, Config{Force: force}, 0, 1)
		adopted := 0
		for _, r := range results {
			if r.Violation != nil {
				report(t, Config{Force: force}, r, t.Name()+"$")
				return
			}
			adopted += r.Adoptions
		}
		t.Logf("%v: %d seeds, %d adoptions of a dead predecessor's lease", force, len(results), adopted)
		if force == StateDirectory && adopted == 0 {
			t.Errorf("%v: no restart adopted its predecessor's lease in %d seeds: the class does not reach the adoption", force, len(results))
		}
	}
}
