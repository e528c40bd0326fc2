package compat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// NotMeasured is the result of a check that a run has no result for: one
// added to drivertest after the table was measured. The table shows it as
// its own column of "not measured" until scripts/compat runs again.
const NotMeasured = "not measured"

// Table is everything docs/compatibility.md shows, as measured by one run
// of scripts/compat. It is kept as JSON next to the test
// (testdata/results.json), which renders it again and compares.
type Table struct {
	Date      string    `json:"date"`     // YYYY-MM-DD, UTC
	Command   string    `json:"command"`  // how to run it again
	Platform  string    `json:"platform"` // Go version, OS and architecture
	Checks    []string  `json:"checks"`   // drivertest.Names() at the time
	Scenarios []string  `json:"scenarios"`
	Services  []Service `json:"services"`
	// Hold is the outcome of TestRcloneUnderHold (rclone under
	// `bucketlease hold` against MinIO), when scripts/compat ran it.
	Hold string `json:"hold,omitempty"`
}

// Service is one server's results.
type Service struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
	Setup   string `json:"setup"`
	// Error says why the server was not measured (it did not build or
	// start here, or refused the bucket); Runs is then empty.
	Error string `json:"error,omitempty"`
	// RawDelete says whether an S3 server honours If-Match on DeleteObject,
	// asked directly rather than through a driver.
	RawDelete string `json:"raw_delete,omitempty"`
	// RawPut says how an S3 server takes If-Match on PutObject with the
	// current ETag, quoted and bare.
	RawPut string `json:"raw_put,omitempty"`
	Runs   []Run  `json:"runs,omitempty"`
}

// Run is the results through one driver.
type Run struct {
	Driver    string           `json:"driver"`
	Error     string           `json:"error,omitempty"` // the driver could not open the URL
	Declared  Caps             `json:"declared"`
	Observed  Caps             `json:"observed"`
	ProbeOK   bool             `json:"probe_ok"`
	Checks    []CheckResult    `json:"checks,omitempty"`
	Lease     string           `json:"lease"` // what the lease does there
	Scenarios []ScenarioResult `json:"scenarios,omitempty"`
	Verdict   string           `json:"verdict"`
}

// clocks says how the lease judges a record's age there, from the probe's
// service-time check: on the service's clock too ("service's"), where the
// driver reports plausible service times; on the machines' clocks alone
// ("assumed synchronised") where it reports none; "implausible" where the
// check failed; else the check's result (NotMeasured where the results
// predate it).
func (r Run) clocks() string {
	for _, c := range r.Checks {
		if c.Name != "service-time" {
			continue
		}
		switch c.Result {
		case "PASS":
			return "service's"
		case "skip":
			return "assumed synchronised"
		case "FAIL":
			return "implausible"
		default:
			return c.Result // not measured, inconclusive
		}
	}
	return NotMeasured
}

// Caps are a driver's capabilities, declared or observed.
type Caps struct {
	Exclusion         string `json:"exclusion"`
	ConditionalDelete bool   `json:"conditional_delete"`
}

func (c Caps) String() string {
	if c.Exclusion == "" {
		return "—"
	}
	d := "no cond. delete"
	if c.ConditionalDelete {
		d = "cond. delete"
	}
	return c.Exclusion + ", " + d
}

// CheckResult is one probe check: PASS, FAIL, skip or known deviation, and
// what the service did when it did not pass.
type CheckResult struct {
	Name   string `json:"name"`
	Result string `json:"result"`
	Got    string `json:"got,omitempty"`
}

// ScenarioResult is one lease scenario.
type ScenarioResult struct {
	Name   string `json:"name"`
	Passed bool   `json:"passed"`
	// FailedClosed: the lease refused to run (ErrPreconditionsIgnored), so
	// the scenario could not happen; nobody got in.
	FailedClosed bool `json:"failed_closed,omitempty"`
	// Broken: the failure broke exclusion (a second holder, or a
	// successor's lease changed); otherwise the lease could not do its
	// work there while nobody else got in.
	Broken bool   `json:"exclusion_broken,omitempty"`
	Detail string `json:"detail"`
}

// WithChecks returns a copy of t whose checks are names (drivertest.Names()
// now), so that a check added to drivertest since t was measured is a
// column of NotMeasured in every run rather than an error. The checks t
// was measured with must be names less the added ones, in the same order:
// a check removed, renamed or moved is an error, since the table would
// then show results under the wrong name.
func (t *Table) WithChecks(names []string) (*Table, error) {
	measured := map[string]bool{}
	for _, c := range t.Checks {
		measured[c] = true
	}
	var kept []string
	for _, n := range names {
		if measured[n] {
			kept = append(kept, n)
		}
	}
	if !slices.Equal(kept, t.Checks) {
		var gone []string
		for _, c := range t.Checks {
			if !slices.Contains(names, c) {
				gone = append(gone, c)
			}
		}
		return nil, fmt.Errorf("the table's checks are not drivertest's less the checks added since it was measured "+
			"(removed or renamed: %q; the rest in another order otherwise)", gone)
	}
	out := *t
	out.Checks = slices.Clone(names)
	out.Services = slices.Clone(t.Services)
	for i, s := range out.Services {
		s.Runs = slices.Clone(s.Runs)
		for j, r := range s.Runs {
			if r.Error != "" {
				continue
			}
			have := map[string]CheckResult{}
			for _, c := range r.Checks {
				have[c.Name] = c
			}
			r.Checks = make([]CheckResult, 0, len(names))
			for _, n := range names {
				c, ok := have[n]
				if !ok && !measured[n] {
					c = CheckResult{Name: n, Result: NotMeasured}
				} else if !ok {
					continue // the run lacks a measured check: left for the caller to see
				}
				r.Checks = append(r.Checks, c)
			}
			s.Runs[j] = r
		}
		out.Services[i] = s
	}
	return &out, nil
}

// unmeasured returns the checks no run has a result for.
func (t *Table) unmeasured() []string {
	var names []string
	for _, n := range t.Checks {
		seen := false
		for _, s := range t.Services {
			for _, r := range s.Runs {
				for _, c := range r.Checks {
					if c.Name == n && c.Result != NotMeasured {
						seen = true
					}
				}
			}
		}
		if !seen {
			names = append(names, n)
		}
	}
	return names
}

// EncodeJSON returns the table as indented JSON.
func (t *Table) EncodeJSON() ([]byte, error) {
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// DecodeJSON reads a table written by EncodeJSON.
func DecodeJSON(data []byte) (*Table, error) {
	var t Table
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return nil, err
	}
	return &t, nil
}

// Markdown renders the table as docs/compatibility.md.
func (t *Table) Markdown() []byte {
	var w bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&w, format, args...) }
	p("# Compatibility: the lease on real object stores\n\n")
	p("Measured on %s by `%s` (%s). Written by `lab/compat`; do not edit by hand:\n", t.Date, t.Command, t.Platform)
	p("run the command again. `go test ./lab/compat` checks that this file is what the\n")
	p("writer makes of `lab/compat/testdata/results.json` and that its checks are drivertest's.\n\n")
	p("Each server ran on 127.0.0.1 with a temporary data directory, at the version shown.\n")
	p("Through every driver that can talk to it, the probe (`bucketlease probe`: package\n")
	p("drivertest's report) ran on scratch keys, then the lease itself:\n\n")
	p("- **what the lease does**: a lease acquired on a free prefix and released: the exclusion it\n")
	p("  reports, and whether the release deleted the object (`If-Match` DELETE) or overwrote it with a\n")
	p("  released record; or `ErrPreconditionsIgnored`, when the lease refuses to run;\n")
	p("- **%s**: 32 contenders start `lease.Acquire` at once on one free prefix, three rounds:\n", ScenarioRace)
	p("  exactly one may win each round, and the lease object must name it;\n")
	p("- **%s**: a holder stops renewing; a second instance is refused before one TTL and takes\n", ScenarioTakeover)
	p("  the lease over after it; the old holder's next renewal gets `ErrLost`;\n")
	p("- **%s**: a fenced holder releases after a successor took over; the successor's lease\n", ScenarioFencedRelease)
	p("  must stay exactly as it was (same version) and renew.\n\n")
	p("The scenarios use a fake clock per instance (TTL 30 s, no waiting) and real requests. A run\n")
	p("where a scenario fails is **not safe**.\n\n")
	p("**Clocks** is how the lease judges a record's age there (the probe's `service-time` check): on\n")
	p("the service's clock as well as the reader's (\"service's\"), so that only the service's clock is\n")
	p("assumed not to jump by a third of a TTL between two answers; or on the machines' clocks alone\n")
	p("(\"assumed synchronised\"), where the driver reports no service time.\n\n")
	p("**Declared** is what the driver claims; **Observed** what the probe's checks showed (package\n")
	p("drivertest lowers the exclusion to `none` on any failed check of a write path, including one\n")
	p("that could not complete). The verdicts:\n\n")
	p("- **safe**: every check passed and the lease scenarios passed;\n")
	p("- **safe, with deviations**: the scenarios passed and the exclusion held; a check outside it failed;\n")
	p("- **inconclusive**: the probe lowered the exclusion, but no failed check shows a write that should\n")
	p("  have been refused being accepted (an operation failed instead), and the scenarios passed;\n")
	p("- **not safe**: a scenario broke exclusion (a second holder, a successor's lease changed), or a\n")
	p("  check shows a write that should have been refused being accepted;\n")
	p("- **not safe, unusable**: a scenario failed without breaking exclusion: the lease cannot renew,\n")
	p("  release or take over there, so a holder fences itself and a dead holder's lease stays stuck;\n")
	p("- **fails closed**: the lease refuses to run there (`ErrPreconditionsIgnored`); nobody gets in;\n")
	p("- **unusable**: requests fail, so the lease is never acquired.\n\n")

	p("## Summary\n\n")
	p("| Service | Version | Driver | Declared | Observed | Probe | What the lease does |")
	for _, s := range t.Scenarios {
		p(" %s |", s)
	}
	p(" Clocks | Verdict |\n|---|---|---|---|---|---|---|---|")
	for range t.Scenarios {
		p("---|")
	}
	p("---|\n")
	for _, s := range t.Services {
		if s.Error != "" {
			p("| %s | %s | — | — | — | — | not measured: %s |", cell(s.Name), cell(s.Version), cell(s.Error))
			for range t.Scenarios {
				p(" — |")
			}
			p(" — | **not measured** |\n")
			continue
		}
		for _, r := range s.Runs {
			if r.Error != "" {
				p("| %s | %s | %s | — | — | — | not measured: %s |", cell(s.Name), cell(s.Version), r.Driver, cell(r.Error))
				for range t.Scenarios {
					p(" — |")
				}
				p(" — | %s |\n", cell(r.Verdict))
				continue
			}
			probe := "OK"
			if !r.ProbeOK {
				var parts []string
				if n := r.failed(); n > 0 {
					parts = append(parts, fmt.Sprintf("FAIL (%d)", n))
				}
				if n := r.count("inconclusive"); n > 0 {
					parts = append(parts, fmt.Sprintf("inconclusive (%d)", n))
				}
				if len(parts) == 0 {
					parts = append(parts, "not OK")
				}
				probe = strings.Join(parts, ", ")
			}
			p("| %s | %s | %s | %s | %s | %s | %s |", cell(s.Name), cell(s.Version), r.Driver,
				r.Declared, r.Observed, probe, cell(r.leaseSummary()))
			for _, name := range t.Scenarios {
				p(" %s |", r.scenario(name))
			}
			p(" %s | %s |\n", r.clocks(), cell(r.Verdict))
		}
	}

	var raw []Service
	for _, s := range t.Services {
		if s.RawDelete != "" {
			raw = append(raw, s)
		}
	}
	if len(raw) > 0 {
		p("\n## Conditional requests on the wire\n\n")
		p("Asked directly (the AWS SDK, below the drivers). **If-Match on DELETE**: does the server refuse\n")
		p("`DeleteObject` with a made-up `If-Match` (412, object kept) and honour the right ETag? The\n")
		p("S3-family drivers declare a conditional delete only for AWS itself, so the probe skips those\n")
		p("checks elsewhere. **If-Match on PUT**: is `PutObject` with the object's current ETag accepted,\n")
		p("both quoted (as RFC 9110 and the SDKs send it) and bare?\n\n")
		p("| Service | Version | If-Match on DELETE | If-Match on PUT, current ETag |\n|---|---|---|---|\n")
		for _, s := range raw {
			p("| %s | %s | %s | %s |\n", cell(s.Name), cell(s.Version), cell(s.RawDelete), cell(s.RawPut))
		}
	}

	p("\n## Checks\n\n")
	p("Each probe check per service and driver: pass, **FAIL**, inconclusive (an operation could not\n")
	p("complete, so the check proves nothing either way), skip (does not apply to what the driver\n")
	p("declares) or deviation (a known deviation). The evidence follows the table.\n\n")
	p("| Service | Driver |")
	for _, c := range t.Checks {
		p(" `%s` |", c)
	}
	p("\n|---|---|")
	for range t.Checks {
		p("---|")
	}
	p("\n")
	for _, s := range t.Services {
		for _, r := range s.Runs {
			if r.Error != "" {
				continue
			}
			p("| %s | %s |", cell(s.Name), r.Driver)
			for _, c := range r.Checks {
				p(" %s |", checkCell(c.Result))
			}
			p("\n")
		}
	}

	if un := t.unmeasured(); len(un) > 0 {
		p("\nNot measured yet on any server (added to drivertest after this run; `scripts/compat` measures\n")
		p("them): `%s`.\n", strings.Join(un, "`, `"))
	}

	if t.Hold != "" {
		p("\n## A real tool under `bucketlease hold`\n\n")
		p("`TestRcloneUnderHold` (lab/compat) against MinIO with the rclone above: two\n")
		p("`bucketlease hold URL --wait -- rclone copy …` runs started together must serialize (their run\n")
		p("windows, from their own logs, must not overlap); a run whose lease another process overwrites\n")
		p("(`bucketlease break --force`) must be stopped within TTL/3 with exit 124; `rclone check` must\n")
		p("find every copy intact.\n\n")
		p("%s\n", t.Hold)
	}

	p("\n## Evidence\n\n")
	p("What each server did where a check or scenario did not pass, and what the scenarios saw.\n")
	for _, s := range t.Services {
		p("\n### %s %s\n\n", s.Name, s.Version)
		p("%s\n", s.Setup)
		if s.Error != "" {
			p("\nNot measured: %s\n", s.Error)
			continue
		}
		p("\n")
		for _, r := range s.Runs {
			if r.Error != "" {
				p("- **%s**: not measured: %s\n", r.Driver, r.Error)
				continue
			}
			if r.leaseSummary() != r.Lease {
				p("- **%s** the lease: %s\n", r.Driver, r.Lease)
			}
			for _, g := range groupChecks(r.Checks) {
				p("- **%s** `%s` %s: %s\n", r.Driver, strings.Join(g.names, "`, `"), g.result, g.got)
			}
			for _, sc := range r.Scenarios {
				word := "passed"
				switch {
				case sc.FailedClosed:
					word = "failed closed"
				case !sc.Passed:
					word = "**FAILED**"
				}
				p("- **%s** `%s` %s: %s\n", r.Driver, sc.Name, word, sc.Detail)
			}
		}
	}
	return w.Bytes()
}

// leaseSummary is what the lease does, short enough for the summary; an
// acquire that failed is detailed under Evidence.
func (r Run) leaseSummary() string {
	if strings.HasPrefix(r.Lease, LeaseAcquireFailed) {
		return LeaseAcquireFailed + " (see evidence)"
	}
	if i := strings.Index(r.Lease, "; release failed:"); i >= 0 {
		return r.Lease[:i] + "; release fails (see evidence)"
	}
	return r.Lease
}

func (r Run) failed() int { return r.count("FAIL") }

// count is the number of checks with the given result.
func (r Run) count(result string) int {
	n := 0
	for _, c := range r.Checks {
		if c.Result == result {
			n++
		}
	}
	return n
}

func (r Run) scenario(name string) string {
	for _, s := range r.Scenarios {
		if s.Name == name {
			switch {
			case s.Passed:
				return "pass"
			case s.FailedClosed:
				return "fails closed"
			}
			return "**FAIL**"
		}
	}
	return "—"
}

func checkCell(result string) string {
	switch result {
	case "PASS":
		return "pass"
	case "FAIL":
		return "**FAIL**"
	case "known deviation":
		return "deviation"
	}
	return result
}

// cell makes text safe in a table cell.
func cell(s string) string {
	s = oneLine(s)
	return strings.ReplaceAll(s, "|", `\|`)
}

type checkGroup struct {
	names       []string
	result, got string
}

// groupChecks gathers the checks that did not pass by what the service did,
// so that one error seen by many checks (refused credentials, say) is shown
// once. Checks whose evidence differs only in their own name (which is in
// their scratch keys, as a path element) are one group; the first one's text is shown.
func groupChecks(checks []CheckResult) []checkGroup {
	var groups []checkGroup
	index := map[string]int{}
	for _, c := range checks {
		if c.Got == "" {
			continue
		}
		k := c.Result + "\x00" + strings.ReplaceAll(c.Got, "/"+c.Name+"/", "/\x00/")
		if i, ok := index[k]; ok {
			groups[i].names = append(groups[i].names, c.Name)
			continue
		}
		index[k] = len(groups)
		groups = append(groups, checkGroup{names: []string{c.Name}, result: c.Result, got: c.Got})
	}
	return groups
}
