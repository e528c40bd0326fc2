package report

import (
	"fmt"
	"io"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/term"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/drivertest"
)

// probeClocks says, from the service-time check, whether the lease on
// this service judges records against the service's clock too, or on the
// machines' clocks alone.
func probeClocks(rep *drivertest.Report) string {
	for _, r := range rep.Results {
		switch {
		case r.Name != "service-time":
		case r.Passed:
			return "checked against the service's: the driver reports its time, and it is plausible"
		case r.Skipped:
			return "assumed synchronised: the driver reports no service time, so the lease judges records on the machines' clocks alone"
		default:
			return "the service's time the driver reports is implausible (see service-time): the lease would judge records by it"
		}
	}
	return "not checked"
}

// Caps renders a driver's capabilities, as probe reports them.
func Caps(c driver.Capabilities) string {
	return fmt.Sprintf("exclusion %s, conditional delete %s", c.Exclusion, YesNo(c.ConditionalDelete))
}

// Leftovers is what a probe leaves behind on purpose: on file://, the
// file driver's lock files, one per key ever written (its scratch keys
// here), which the driver never removes.
type Leftovers struct {
	Dir       string // the lock directory; "" for other drivers
	LockFiles int    // how many lock files the probe added there
}

func (l Leftovers) print(w io.Writer) {
	if l.LockFiles == 0 {
		return
	}
	fmt.Fprintf(w, "\nleft behind: %d empty lock files in %s\n%s\n", l.LockFiles, l.Dir,
		term.Wrap("  the file driver's, one per scratch key written. The scratch keys were removed; their lock files stay because the driver never removes one (unlinking a lock file that another process is about to lock would give the two processes two different locks). They hold nothing.",
			ProbeWidth, "  "))
}

// ProbeWidth is the width probe's report keeps to: it reads in a
// terminal of 100 columns, and each check's detail is wrapped below it.
const ProbeWidth = 100

// PrintProbe prints probe's report for people: one line per check with
// its name and result, what a conforming service does below it, and, when
// this one did something else, what it did; then the verdict and what the
// probe left. Every line fits in ProbeWidth columns (ProbeJSON has the
// same report whole).
func PrintProbe(w io.Writer, rep *drivertest.Report, left Leftovers) {
	nameW := len("CHECK")
	for _, r := range rep.Results {
		nameW = max(nameW, min(len(r.Name), ProbeWidth/2))
	}
	fmt.Fprintf(w, "%-*s  %s\n", nameW, "CHECK", "RESULT")
	fmt.Fprintf(w, "%s\n", term.Wrap("  (below each: what a conforming service does; \"got:\" what this one did, when not that)", ProbeWidth, ""))
	for _, r := range rep.Results {
		fmt.Fprintf(w, "%-*s  %s\n", nameW, r.Name, r.Status()) // a name is a short word
		fmt.Fprintf(w, "%s\n", term.Wrap("    "+term.OneLine(r.Expect), ProbeWidth, "    "))
		if got := term.Safe(term.OneLine(r.Got)); got != "" && got != "as expected" { // the service's own words
			fmt.Fprintf(w, "%s\n", term.Wrap("    got: "+got, ProbeWidth, "         "))
		}
	}
	fmt.Fprintf(w, "\ndeclared: %s\nobserved: %s\n", Caps(rep.Declared), Caps(rep.Observed))
	fmt.Fprintf(w, "%s\n", term.Wrap("clocks:   "+probeClocks(rep), ProbeWidth, "          "))
	var verdict string
	switch {
	case rep.OK():
		verdict = fmt.Sprintf("verdict:  OK, the service gives the exclusion its driver declares (%s)", rep.Observed.Exclusion)
	case rep.Observed.Exclusion == driver.NoExclusion:
		verdict = "verdict:  FAIL, the service ignores write preconditions: it cannot keep a second writer out, and the lease refuses to run on it"
	default:
		verdict = "verdict:  FAIL, the service does not behave as its driver declares; see the failed checks"
	}
	fmt.Fprintf(w, "%s\n", term.Wrap(verdict, ProbeWidth, "          "))
	left.print(w)
}

// ProbeReport is probe's report as --json writes it.
type ProbeReport struct {
	URL      string            `json:"url"`
	OK       bool              `json:"ok"`
	Declared capsJSON          `json:"declared"`
	Observed capsJSON          `json:"observed"`
	Results  []probeResultJSON `json:"results"`
	// Clocks says whether the lease on this service judges records against
	// the service's clock too (from the service-time check).
	Clocks string `json:"clocks"`
	// LockFilesLeft is how many of the file driver's lock files the probe
	// added to LockDir (file:// only): the scratch keys were removed, their
	// lock files stay (the driver never removes one).
	LockFilesLeft int    `json:"lock_files_left,omitempty"`
	LockDir       string `json:"lock_dir,omitempty"`
}

type capsJSON struct {
	Exclusion         string `json:"exclusion"`
	ConditionalDelete bool   `json:"conditional_delete"`
}

type probeResultJSON struct {
	Name      string `json:"name"`
	Result    string `json:"result"` // PASS, FAIL, inconclusive, skip, known deviation
	Expect    string `json:"expect"`
	Got       string `json:"got"`
	Passed    bool   `json:"passed"`
	Skipped   bool   `json:"skipped,omitempty"`
	Deviation string `json:"deviation,omitempty"`
	Errored   bool   `json:"errored,omitempty"`
}

// ProbeJSON is rep, of a probe of url that left left, as --json writes it.
func ProbeJSON(url string, rep *drivertest.Report, left Leftovers) ProbeReport {
	j := ProbeReport{URL: url, OK: rep.OK(), LockFilesLeft: left.LockFiles, LockDir: left.Dir,
		Declared: capsJSON{rep.Declared.Exclusion.String(), rep.Declared.ConditionalDelete},
		Observed: capsJSON{rep.Observed.Exclusion.String(), rep.Observed.ConditionalDelete}, Clocks: probeClocks(rep)}
	for _, r := range rep.Results {
		j.Results = append(j.Results, probeResultJSON{Name: r.Name, Result: r.Status(), Expect: r.Expect, Got: r.Got,
			Passed: r.Passed, Skipped: r.Skipped, Deviation: r.Deviation, Errored: r.Errored})
	}
	return j
}
