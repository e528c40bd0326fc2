//go:build linux

package chaos

import (
	"strings"
	"testing"
	"time"
)

// A synthetic run: two processes on p0; A acquires, then B takes over.
func synthetic(extra ...Entry) *Result {
	s := int64(time.Second)
	es := []Entry{
		{T: 1 * s, Proc: "A", ID: "a", Ev: EvAcquireStart, Prefix: "p0"},
		{T: 2 * s, Proc: "A", ID: "a", Ev: EvAcquireOK, Prefix: "p0", Epoch: 1, Kind: "acquired"},
		{T: 5 * s, Proc: "B", ID: "b", Ev: EvAcquireStart, Prefix: "p0"},
		{T: 6 * s, Proc: "B", ID: "b", Ev: EvAcquireOK, Prefix: "p0", Epoch: 1, Kind: "took-over", Detail: "took over a stale lease"},
	}
	es = append(es, extra...)
	for i := range es {
		for j := i; j > 0 && es[j].T < es[j-1].T; j-- {
			es[j], es[j-1] = es[j-1], es[j]
		}
	}
	return &Result{Config: Config{Driver: "mem", TTL: 3 * time.Second, Seed: 7}, Entries: es}
}

func logWrite(proc string, epoch int, key, cond string, start, end float64, ok, refused bool, ver string) []Entry {
	s := float64(time.Second)
	return []Entry{
		{T: int64(start * s), Proc: proc, ID: strings.ToLower(proc), Ev: EvWriteStart, Prefix: "p0", Epoch: epoch, Key: key, Cond: cond},
		{T: int64(end * s), Proc: proc, ID: strings.ToLower(proc), Ev: EvWriteEnd, Prefix: "p0", Epoch: epoch, Key: key, Cond: cond, OK: ok, Refused: refused, Ver: ver},
	}
}

func invariants(c *Check) string {
	var s []string
	for _, v := range c.Violations {
		s = append(s, v.Invariant)
	}
	return strings.Join(s, ",")
}

func TestCheckerExclusion(t *testing.T) {
	cases := []struct {
		name  string
		extra []Entry
		want  string
	}{
		{"a write of the old epoch started before the new one began", logWrite("A", 1, "p0/chunks/A.e1.b1/0", "If-None-Match: *", 4, 8, true, false, "v1"), ""},
		{"a write of the old epoch started after the new one began", logWrite("A", 1, "p0/chunks/A.e1.b1/0", "If-None-Match: *", 7, 8, true, false, "v1"), InvExclusion},
		{"a late write refused by the fence", logWrite("A", 1, "p0/chunks/A.e1.b1/0", "If-None-Match: *", 7, 7.1, false, true, ""), ""},
		{"a late write that failed at the service still started", logWrite("A", 1, "p0/chunks/A.e1.b1/0", "If-None-Match: *", 7, 7.1, false, false, ""), InvExclusion},
		{"the new holder's own writes", logWrite("B", 1, "p0/chunks/B.e1.b1/0", "If-None-Match: *", 7, 8, true, false, "v1"), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := synthetic(c.extra...)
			res.Check = CheckRun(res)
			if got := invariants(res.Check); got != c.want {
				t.Fatalf("violations %q, want %q", got, c.want)
			}
			for _, v := range res.Check.Violations {
				if r := res.Report(v); !strings.Contains(r, "seed 7") || !strings.Contains(r, "interleaving") {
					t.Errorf("report lacks the seed or the interleaving:\n%s", r)
				}
			}
		})
	}
}

func TestCheckerLatestAndVanished(t *testing.T) {
	// Two successful creates of LATEST: the second replaced the first.
	extra := append(logWrite("A", 1, "p0/LATEST", "If-None-Match: *", 3, 3.1, true, false, "v1"),
		logWrite("B", 1, "p0/LATEST", "If-None-Match: *", 7, 7.1, true, false, "v2")...)
	if got := invariants(CheckRun(synthetic(extra...))); got != InvLatest {
		t.Errorf("two creates of LATEST: violations %q, want %q", got, InvLatest)
	}
	// B acquires a free key after A's lease, which A never released.
	s := int64(time.Second)
	res := synthetic()
	res.Entries[3].Kind, res.Entries[3].Detail = "acquired", ""
	if got := invariants(CheckRun(res)); got != InvRemoved {
		t.Errorf("a vanished lease: violations %q, want %q", got, InvRemoved)
	}
	// The same after A released: fine.
	res = synthetic(Entry{T: 4 * s, Proc: "A", ID: "a", Ev: EvReleaseStart, Prefix: "p0"})
	res.Entries[4].Kind, res.Entries[4].Detail = "acquired", ""
	if got := invariants(CheckRun(res)); got != "" {
		t.Errorf("a released lease: violations %q, want none", got)
	}
}

func TestCheckerListing(t *testing.T) {
	extra := logWrite("A", 1, "p0/chunks/A.e1.b1/0", "If-None-Match: *", 3, 3.1, false, true, "")
	res := synthetic(extra...)
	res.Objects = []Object{
		// written although the fence refused it
		{Label: "p0", Key: "p0/chunks/A.e1.b1/0", Name: "chunks/A.e1.b1/0", Body: []byte("chunk proc=A epoch=1 tag=A.e1.b1 j=0")},
		// written by nobody's logged write
		{Label: "p0", Key: "p0/chunks/B.e1.b9/0", Name: "chunks/B.e1.b9/0", Body: []byte("chunk proc=B epoch=1 tag=B.e1.b9 j=0")},
		// LATEST names a manifest that is not there
		{Label: "p0", Key: "p0/LATEST", Name: "LATEST", Body: []byte("latest k=1 manifest=p0/manifests/B.e1.b9 proc=B")},
	}
	got := invariants(CheckRun(res))
	for _, want := range []string{InvUnlogged, InvIntegrity} {
		if !strings.Contains(got, want) {
			t.Errorf("violations %q lack %q", got, want)
		}
	}
}

// A scratch key the lease left beside LEASE (a worker killed during a
// probe) is the lease's own; a key that only looks like one is the
// worker's, and unlogged.
func TestCheckerListingScratchKeys(t *testing.T) {
	res := synthetic()
	res.Objects = []Object{{Label: "p0", Key: "p0/LEASE.stream-probe-0123456789abcdef", Name: "LEASE.stream-probe-0123456789abcdef",
		Body: make([]byte, 16)}}
	if got := invariants(CheckRun(res)); got != "" {
		t.Errorf("a leftover scratch key: violations %q, want none", got)
	}
	res.Objects = []Object{{Label: "p0", Key: "p0/LEASE.stream-probe-xyz", Name: "LEASE.stream-probe-xyz", Body: []byte("chunk proc=A")}}
	if got := invariants(CheckRun(res)); !strings.Contains(got, InvUnlogged) {
		t.Errorf("an unlogged key that is no scratch key: violations %q, want %q", got, InvUnlogged)
	}
}
