package compat

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/mushroomdb/bucketlease/drivertest"
)

const (
	committedDoc  = "../../docs/compatibility.md"
	committedJSON = "testdata/results.json"
)

// TestCommittedTableIsCurrent checks that docs/compatibility.md is exactly
// what the writer makes of the committed results, and that those results
// name drivertest's checks and this package's scenarios as they are now:
// a hand edit, or a check added, renamed or removed since the table was
// measured, fails here until scripts/compat is run again.
func TestCommittedTableIsCurrent(t *testing.T) {
	data, err := os.ReadFile(committedJSON)
	if err != nil {
		t.Fatal(err)
	}
	tab, err := DecodeJSON(data)
	if err != nil {
		t.Fatalf("%s: %v", committedJSON, err)
	}
	const rerun = "; run scripts/compat to measure again"
	// A check added to drivertest since the table was measured is a
	// column of "not measured" (WithChecks); one removed, renamed or moved
	// fails here.
	cur, err := tab.WithChecks(drivertest.Names())
	if err != nil {
		t.Fatalf("%v: the table's checks are\n%q\ndrivertest's are\n%q%s", err, tab.Checks, drivertest.Names(), rerun)
	}
	tab = cur
	if want := ScenarioNames(); !slices.Equal(tab.Scenarios, want) {
		t.Errorf("the table's scenarios are %q, want %q%s", tab.Scenarios, want, rerun)
	}
	if len(tab.Services) == 0 {
		t.Error("the table has no services")
	}
	for _, s := range tab.Services {
		if s.Error == "" && len(s.Runs) != len(Drivers(s.Kind)) {
			t.Errorf("%s: %d runs, want one per driver %q", s.ID, len(s.Runs), Drivers(s.Kind))
		}
		for _, r := range s.Runs {
			if r.Error != "" {
				continue
			}
			var names, scen []string
			for _, c := range r.Checks {
				names = append(names, c.Name)
			}
			for _, sc := range r.Scenarios {
				scen = append(scen, sc.Name)
			}
			if !slices.Equal(names, tab.Checks) {
				t.Errorf("%s/%s: checks %q, want %q%s", s.ID, r.Driver, names, tab.Checks, rerun)
			}
			if !slices.Equal(scen, tab.Scenarios) {
				t.Errorf("%s/%s: scenarios %q, want %q%s", s.ID, r.Driver, scen, tab.Scenarios, rerun)
			}
			if r.Verdict != verdict(r) {
				t.Errorf("%s/%s: verdict %q, but the results give %q", s.ID, r.Driver, r.Verdict, verdict(r))
			}
		}
	}
	doc, err := os.ReadFile(committedDoc)
	if err != nil {
		t.Fatal(err)
	}
	if got := tab.Markdown(); !bytes.Equal(got, doc) {
		t.Errorf("%s is not what the writer makes of %s (first difference at line %d); do not edit it by hand%s",
			committedDoc, committedJSON, firstDiffLine(got, doc), rerun)
	}
}

func firstDiffLine(a, b []byte) int {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return i + 1
		}
	}
	return min(len(la), len(lb)) + 1
}

// TestMarkdown checks the writer's format on a small table: one row per
// service and driver, a column per check, a failed scenario as "not safe",
// a service that did not run as a row with its reason, and evidence grouped.
func TestMarkdown(t *testing.T) {
	pass := func(names ...string) []CheckResult {
		var cs []CheckResult
		for _, n := range names {
			cs = append(cs, CheckResult{Name: n, Result: "PASS"})
		}
		return cs
	}
	good := []ScenarioResult{{Name: ScenarioRace, Passed: true, Detail: "ok"}, {Name: ScenarioTakeover, Passed: true}, {Name: ScenarioFencedRelease, Passed: true}}
	bad := slices.Clone(good)
	bad[2] = ScenarioResult{Name: ScenarioFencedRelease, Broken: true, Detail: "removed the successor's lease"}
	conditional := Caps{Exclusion: "conditional"}
	runs := []Run{
		{Driver: "s3", Declared: conditional, Observed: conditional, ProbeOK: true, Checks: pass("a", "b", "service-time"), Lease: LeaseReleaseRecord, Scenarios: good},
		{Driver: "r2", Declared: conditional, Observed: conditional, Checks: []CheckResult{
			{Name: "a", Result: "FAIL", Got: "key x/a/obj: boom | pipe"}, {Name: "b", Result: "FAIL", Got: "key x/b/obj: boom | pipe"}, {Name: "service-time", Result: "skip"}},
			Lease: LeaseReleaseRecord, Scenarios: bad},
	}
	closed := []ScenarioResult{{Name: ScenarioRace, FailedClosed: true, Detail: "refused"}, {Name: ScenarioTakeover, FailedClosed: true}, {Name: ScenarioFencedRelease, FailedClosed: true}}
	runs = append(runs, Run{Driver: "minio", Declared: conditional, Observed: Caps{Exclusion: "none"}, Checks: []CheckResult{
		{Name: "a", Result: "FAIL", Got: "second Put IfAbsent: success"}, {Name: "b", Result: "skip"}, {Name: "service-time", Result: "skip"}},
		Lease: LeaseFailsClosed, Scenarios: closed})
	for i := range runs {
		runs[i].Verdict = verdict(runs[i])
	}
	tab := &Table{Date: "2026-12-01", Command: "scripts/compat", Platform: "go", Checks: []string{"a", "b", "service-time"}, Scenarios: ScenarioNames(),
		Services: []Service{
			{ID: "x", Name: "X", Version: "v1", Kind: KindS3, Setup: "built", RawDelete: DeleteIgnored, RawPut: IfMatchPutOK, Runs: runs},
			{ID: "y", Name: "Y", Version: "v2", Kind: KindS3, Setup: "tried", Error: "did not build here: no | space"},
		},
		Hold: "PASS with rclone v0"}
	md := string(tab.Markdown())
	for _, want := range []string{
		"| X | v1 | s3 | conditional, no cond. delete | conditional, no cond. delete | OK | " + LeaseReleaseRecord + " | pass | pass | pass | service's | safe |\n",
		"| X | v1 | r2 | conditional, no cond. delete | conditional, no cond. delete | FAIL (2) | " + LeaseReleaseRecord + " | pass | pass | **FAIL** | assumed synchronised | **not safe** (fenced-release: exclusion broken) |\n",
		"| Y | v2 | — | — | — | — | not measured: did not build here: no \\| space | — | — | — | — | **not measured** |\n",
		"| Service | Driver | `a` | `b` | `service-time` |\n",
		"| X | r2 | **FAIL** | **FAIL** | skip |\n",
		"- **r2** `a`, `b` FAIL: key x/a/obj: boom | pipe\n",
		"- **r2** `fenced-release` **FAILED**: removed the successor's lease\n",
		"Not measured: did not build here: no | space\n",
		"| X | v1 | minio | conditional, no cond. delete | none, no cond. delete | FAIL (1) | " + LeaseFailsClosed + " | fails closed | fails closed | fails closed | assumed synchronised | fails closed (the lease refuses to run) |\n",
		"| X | minio | **FAIL** | skip | skip |\n",
		"- **minio** `race-32` failed closed: refused\n",
		"## A real tool under `bucketlease hold`",
		"PASS with rclone v0\n",
		"| X | v1 | " + DeleteIgnored + " | " + IfMatchPutOK + " |\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the Markdown lacks %q; it is:\n%s", want, md)
		}
	}
	js, err := tab.EncodeJSON()
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeJSON(js)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back.Markdown(), tab.Markdown()) {
		t.Error("a table read back from its JSON renders differently")
	}
}

func TestVerdictTellsAcceptedWritesFromIncompleteChecks(t *testing.T) {
	conditional := Caps{Exclusion: "conditional"}
	good := []ScenarioResult{{Name: ScenarioRace, Passed: true}, {Name: ScenarioTakeover, Passed: true}, {Name: ScenarioFencedRelease, Passed: true}}
	run := Run{Driver: "s3", Declared: conditional, Observed: Caps{Exclusion: "none"}, Lease: LeaseReleaseRecord, Scenarios: good,
		Checks: []CheckResult{{Name: "cas-counter", Result: "FAIL", Got: "Get counter: error: unexpected EOF"}}}
	if got := verdict(run); !strings.HasPrefix(got, "inconclusive") {
		t.Errorf("a check that could not complete: verdict %q, want inconclusive", got)
	}
	withInconclusive := run
	withInconclusive.Observed = conditional
	withInconclusive.Checks = []CheckResult{{Name: "cas-counter", Result: "inconclusive", Got: "unexpected EOF"}}
	if got := verdict(withInconclusive); got != "safe, with inconclusive checks (see evidence)" {
		t.Errorf("only an inconclusive check: verdict %q", got)
	}
	run.Checks = append(run.Checks, CheckResult{Name: "put-if-match-stale", Result: "FAIL", Got: "Put IfMatch(stale): success"})
	if got := verdict(run); !strings.Contains(got, "not safe") || !strings.Contains(got, "put-if-match-stale") {
		t.Errorf("an accepted write: verdict %q, want not safe naming put-if-match-stale", got)
	}
	run.Checks = nil
	run.Observed = conditional
	run.Scenarios = slices.Clone(good)
	run.Scenarios[1].Passed = false
	if got := verdict(run); !strings.Contains(got, "not safe, unusable") {
		t.Errorf("a scenario that failed without breaking exclusion: verdict %q, want not safe, unusable", got)
	}
	run.Scenarios[0].Broken = true
	if got := verdict(run); !strings.HasPrefix(got, "**not safe** (race-32: exclusion broken)") {
		t.Errorf("a scenario that broke exclusion: verdict %q, want not safe naming race-32", got)
	}
}

func TestEvidenceDropsNoise(t *testing.T) {
	got := evidence("s3: put compat-s3/probe/0123456789ab/x/obj: api error\n StatusCode: 400, RequestID: ABC, HostID: xyz=, api error Foo in bucketlease-compat-0a1b2c3d")
	want := "s3: put compat-s3/probe/…/x/obj: api error StatusCode: 400, api error Foo in BUCKET"
	if got != want {
		t.Errorf("evidence = %q, want %q", got, want)
	}
	if long := evidence(strings.Repeat("é", maxEvidence)); len(long) > maxEvidence+len("…") {
		t.Errorf("evidence of a long error is %d bytes", len(long))
	}
}

// TestWithChecks: a check added since the table was measured becomes a
// column of NotMeasured, shown as such and listed under the checks table;
// a check removed, renamed or moved is an error.
func TestWithChecks(t *testing.T) {
	run := Run{Driver: "s3", Declared: Caps{Exclusion: "conditional"}, Observed: Caps{Exclusion: "conditional"}, ProbeOK: true,
		Checks: []CheckResult{{Name: "a", Result: "PASS"}, {Name: "c", Result: "FAIL", Got: "boom"}}, Lease: LeaseReleaseRecord}
	run.Verdict = verdict(run)
	tab := &Table{Date: "2026-12-01", Command: "scripts/compat", Checks: []string{"a", "c"}, Scenarios: ScenarioNames(),
		Services: []Service{{ID: "x", Name: "X", Version: "v1", Kind: KindS3, Runs: []Run{run}}}}
	cur, err := tab.WithChecks([]string{"a", "b", "c", "d"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cur.Services[0].Runs[0].Checks {
		got = append(got, c.Name+"="+c.Result)
	}
	if want := []string{"a=PASS", "b=" + NotMeasured, "c=FAIL", "d=" + NotMeasured}; !slices.Equal(got, want) {
		t.Errorf("checks %q, want %q", got, want)
	}
	if verdict(cur.Services[0].Runs[0]) != run.Verdict {
		t.Errorf("the verdict changed with checks not measured: %q", verdict(cur.Services[0].Runs[0]))
	}
	md := string(cur.Markdown())
	for _, want := range []string{"| X | s3 | pass | not measured | **FAIL** | not measured |\n", "Not measured yet on any server", "`b`, `d`."} {
		if !strings.Contains(md, want) {
			t.Errorf("the Markdown lacks %q:\n%s", want, md)
		}
	}
	if len(tab.Services[0].Runs[0].Checks) != 2 {
		t.Error("WithChecks changed the table it was called on")
	}
	for _, names := range [][]string{{"a"}, {"c", "a"}, {"a", "b2", "d"}} {
		if _, err := tab.WithChecks(names); err == nil {
			t.Errorf("WithChecks(%q) of a table measured with %q: no error", names, tab.Checks)
		}
	}
}
