//go:build linux

package chaos

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/lease/admin"
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

// logStream logs a streamed write: its start, the requests of its upload as
// they were asked for (the last one the commit's), and, unless end is 0,
// its outcome.
func logStream(proc string, key string, start float64, reqs []float64, end float64, ok bool, err string) []Entry {
	s := float64(time.Second)
	id := strings.ToLower(proc)
	es := []Entry{{T: int64(start * s), Proc: proc, ID: id, Ev: EvWriteStart, Prefix: "p0", Epoch: 1, Key: key, Cond: "If-None-Match: *", Detail: "streamed, 10485761 bytes"}}
	for i, r := range reqs {
		es = append(es, Entry{T: int64(r * s), Proc: proc, ID: id, Ev: EvStreamReq, Prefix: "p0", Key: key, Seq: int64(i + 1)})
	}
	if end != 0 {
		es = append(es, Entry{T: int64(end * s), Proc: proc, ID: id, Ev: EvWriteEnd, Prefix: "p0", Epoch: 1, Key: key, Cond: "If-None-Match: *",
			OK: ok, Err: err, Ver: map[bool]string{true: "v9"}[ok], Detail: "streamed"})
	}
	return es
}

// In the synthetic run A's epoch ends where B's, certainly later, begins:
// B's acquire returned at 6 s.
func TestCheckerLateCommit(t *testing.T) {
	key := "p0/chunks/A.e1.b4/0"
	obj := []Object{{Label: "p0", Key: key, Name: "chunks/A.e1.b4/0", Body: []byte("chunk proc=A epoch=1 tag=A.e1.b4 j=0 size=10485761"), Size: 10485761}}
	cases := []struct {
		name    string
		extra   []Entry
		objects []Object
		want    string
	}{
		{"committed before the successor began", logStream("A", key, 4, []float64{4.2, 4.5, 4.8, 4.9}, 5, true, ""), obj, ""},
		// The negative control: begun in A's time, committed after B's
		// acquire returned; the exclusion check, which looks at the
		// write's start only, is silent.
		{"committed after the successor began", logStream("A", key, 4, []float64{4.2, 4.5, 5.5, 6.5}, 6.6, true, ""), obj, InvLateCommit},
		{"the commit refused by the fence", append(logStream("A", key, 4, []float64{4.2, 4.5, 5.5, 6.5}, 6.6, false, "MayStart refused the commit: lease: fenced"),
			Entry{T: int64(6.5 * float64(time.Second)), Proc: "A", ID: "a", Ev: EvStreamReq, Prefix: "p0", Key: key, Seq: 4, Refused: true}), nil, ""},
		{"killed after asking for a late commit, which landed", logStream("A", key, 4, []float64{4.2, 4.5, 5.5, 6.5}, 0, false, ""), obj, InvLateCommit},
		{"killed after asking for a late commit, which did not land", logStream("A", key, 4, []float64{4.2, 4.5, 5.5, 6.5}, 0, false, ""), nil, ""},
		{"a late commit whose answer was lost, which landed", logStream("A", key, 4, []float64{4.2, 4.5, 5.5, 6.5}, 6.6, false, "completing the multipart upload failed without an answer"), obj, InvLateCommit},
		{"a late commit whose answer was lost, which did not land", logStream("A", key, 4, []float64{4.2, 4.5, 5.5, 6.5}, 6.6, false, "completing the multipart upload failed without an answer"), nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := synthetic(c.extra...)
			res.Objects = c.objects
			res.Check = CheckRun(res)
			if got := invariants(res.Check); got != c.want {
				t.Fatalf("violations %q, want %q", got, c.want)
			}
			for _, v := range res.Check.Violations {
				if r := res.Report(v); !strings.Contains(r, "seed 7") || !strings.Contains(r, "stream-req") {
					t.Errorf("report lacks the seed or the upload's requests:\n%s", r)
				}
			}
		})
	}
}

func TestCheckerOverwritten(t *testing.T) {
	// A's LATEST write, begun before B's epoch, and B's, after it.
	extra := append(logWrite("A", 1, "p0/LATEST", `If-Match: "v0"`, 4, 8, true, false, "v3"),
		logWrite("B", 1, "p0/LATEST", `If-Match: "v1"`, 7, 7.1, true, false, "v2")...)
	latest := func(proc string) []Object {
		return []Object{{Label: "p0", Key: "p0/LATEST", Name: "LATEST", Size: -1,
			Body: []byte("latest k=2 manifest=p0/manifests/" + proc + ".e1.b1 proc=" + proc + " epoch=1 tag=" + proc + ".e1.b1")}}
	}
	for _, c := range []struct {
		name, proc, want string
	}{
		{"the successor's LATEST stands", "B", ""},
		// The negative control: what the old holder wrote is what the
		// bucket holds, over its successor's successful write.
		{"the old holder's LATEST replaced the successor's", "A", InvOverwritten},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := synthetic(extra...)
			res.Objects = latest(c.proc)
			got := invariants(CheckRun(res))
			// LATEST names a manifest that is not there: integrity fires
			// either way; only overwritten is asked about here.
			got = strings.Trim(strings.ReplaceAll(got, InvIntegrity, ""), ",")
			if got != c.want {
				t.Fatalf("violations %q, want %q", got, c.want)
			}
		})
	}
}

func TestCheckerSealedChunks(t *testing.T) {
	c0, c1, m := "p0/chunks/A.e1.b4/0", "p0/chunks/A.e1.b4/1", "p0/manifests/A.e1.b4"
	var extra []Entry
	extra = append(extra, logStream("A", c0, 3, []float64{3.1, 3.2, 3.3, 3.4}, 3.5, true, "")...)
	extra = append(extra, logWrite("A", 1, c1, "If-None-Match: *", 3.6, 3.7, true, false, "v1")...)
	extra = append(extra, logWrite("A", 1, m, "If-None-Match: *", 3.8, 3.9, true, false, "v2")...)
	extra = append(extra, logWrite("A", 1, m, `If-Match: "v2"`, 4.0, 4.1, true, false, "v3")...)
	chunk0 := func(size int64) Object {
		return Object{Label: "p0", Key: c0, Name: "chunks/A.e1.b4/0", Body: []byte("chunk proc=A epoch=1 tag=A.e1.b4 j=0 size=10485761"), Size: size}
	}
	chunk1 := Object{Label: "p0", Key: c1, Name: "chunks/A.e1.b4/1", Body: []byte("chunk proc=A epoch=1 tag=A.e1.b4 j=1"), Size: 37}
	manifest := Object{Label: "p0", Key: m, Name: "manifests/A.e1.b4", Size: 100,
		Body: []byte("manifest k=1 proc=A epoch=1 tag=A.e1.b4 sealed=true parent= chunks=" + c0 + "," + c1)}
	for _, c := range []struct {
		name    string
		objects []Object
		want    string
	}{
		{"every chunk there and whole", []Object{chunk0(10485761), chunk1, manifest}, ""},
		{"the size unknown (a driver without List)", []Object{chunk0(-1), chunk1, manifest}, ""},
		// The negative controls.
		{"a chunk missing", []Object{chunk0(10485761), manifest}, InvSealed},
		{"the streamed chunk cut short", []Object{chunk0(5 << 20), chunk1, manifest}, InvSealed},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := synthetic(extra...)
			res.Objects = c.objects
			if got := invariants(CheckRun(res)); got != c.want {
				t.Fatalf("violations %q, want %q", got, c.want)
			}
		})
	}
}

func TestCheckerPending(t *testing.T) {
	s := int64(time.Second)
	key := "p0/chunks/A.e1.b4/0"
	up := PendingUpload{Label: "p0", Key: key, Name: "chunks/A.e1.b4/0", Upload: "multipart upload u1", Initiated: time.Unix(4, 0)}
	scratchKey := "p0/LEASE.stream-probe-0123456789abcdef"
	sup := PendingUpload{Label: "p0", Key: scratchKey, Name: "LEASE.stream-probe-0123456789abcdef", Upload: "multipart upload u2"}
	tmp := PendingUpload{Label: "p0", Upload: "/tmp/x/p0/.bucketlease/tmp/put-1"}
	startA := Entry{T: 1, Proc: "A", ID: "a", Ev: EvStart}
	exitA := Entry{T: 9 * s, Proc: "A", ID: "a", Ev: EvExit}
	scratchA := Entry{T: 2 * s, Proc: "A", ID: "a", Ev: EvScratchStart, Prefix: "p0", Key: scratchKey}
	cases := []struct {
		name      string
		extra     []Entry
		pending   []PendingUpload
		noPending string
		want      string
		killed    int
	}{
		{"none left", nil, nil, "", "", 0},
		{"left by a writer killed mid-upload", append(logStream("A", key, 4, []float64{4.2}, 0, false, ""), startA), []PendingUpload{up}, "", "", 1},
		{"left by the lease's stream probe, killed", []Entry{startA, scratchA}, []PendingUpload{sup}, "", "", 1},
		{"a temporary file, some process killed", []Entry{startA}, []PendingUpload{tmp}, "", "", 1},
		{"not listed on this driver", []Entry{startA, exitA}, []PendingUpload{up}, "the driver cannot say", "", 0},
		// The negative controls.
		{"left by a write that logged its outcome", append(logStream("A", key, 4, []float64{4.2}, 4.5, false, "uploading part 1: reset; what it had staged (multipart upload u1) was aborted"), startA),
			[]PendingUpload{up}, "", InvPending, 0},
		{"begun long before a write that logged its outcome", append(logStream("A", key, 6, []float64{6.2}, 6.5, false, "uploading part 1: reset; what it had staged (multipart upload u1) was aborted"), startA),
			[]PendingUpload{up}, "", InvPending, 0},
		{"left by a writer that exited", append(logStream("A", key, 4, []float64{4.2}, 0, false, ""), startA, exitA), []PendingUpload{up}, "", InvPending, 0},
		{"a scratch key's upload nobody logged", []Entry{startA}, []PendingUpload{sup}, "", InvPending, 0},
		{"a scratch key's upload that ended", []Entry{startA, scratchA, {T: 3 * s, Proc: "A", ID: "a", Ev: EvScratchEnd, Prefix: "p0", Key: scratchKey}},
			[]PendingUpload{sup}, "", InvPending, 0},
		{"a scratch key's upload whose create failed", []Entry{startA, scratchA, {T: 3 * s, Proc: "A", ID: "a", Ev: EvScratchEnd, Prefix: "p0", Key: scratchKey,
			Err: "minio: put p0/LEASE.stream-probe-0123456789abcdef (If-None-Match: *): starting the multipart upload: context canceled; nothing had been staged"}},
			[]PendingUpload{sup}, "", InvPending, 0},
		{"a temporary file, nobody killed", []Entry{startA, exitA}, []PendingUpload{tmp}, "", InvPending, 0},
		{"an upload of a key nobody wrote", []Entry{startA}, []PendingUpload{{Label: "p0", Key: "p0/chunks/Z.e1.b1/0", Name: "chunks/Z.e1.b1/0", Upload: "u3"}}, "", InvPending, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := synthetic(c.extra...)
			res.Pending, res.NoPending = c.pending, c.noPending
			ch := CheckRun(res)
			if got := invariants(ch); got != c.want {
				t.Fatalf("violations %q, want %q", got, c.want)
			}
			// An upload begun during a write that returned without
			// saying so is an orphaned create; one begun outside it is
			// not.
			for _, v := range ch.Violations {
				want := ""
				if strings.Contains(c.name, "left by a write that logged") || strings.Contains(c.name, "create failed") {
					want = KnownOrphanedCreate
				}
				if v.Known != want {
					t.Errorf("violation marked known %q, want %q: %s", v.Known, want, v.Detail)
				}
			}
			if ch.PendingKilled != c.killed || ch.PendingListed != (c.noPending == "") {
				t.Errorf("PendingKilled %d, PendingListed %v; want %d, %v", ch.PendingKilled, ch.PendingListed, c.killed, c.noPending == "")
			}
		})
	}
}

// TestCheckerPendingReported: an upload begun during a write that
// returned an error saying that what it had staged is left to the
// service's clean-up (the sweep could not list the key's uploads) is
// allowed and counted; the same upload after a write that said it had
// aborted everything is the orphaned create.
func TestCheckerPendingReported(t *testing.T) {
	key := "p0/chunks/A.e1.b4/0"
	up := PendingUpload{Label: "p0", Key: key, Name: "chunks/A.e1.b4/0", Upload: "multipart upload u1", Initiated: time.Unix(4, 0)}
	startA := Entry{T: 1, Proc: "A", ID: "a", Ev: EvStart}
	for _, c := range []struct {
		err      string
		want     string
		reported int
	}{
		{"starting the multipart upload: connection reset; aborting what it had staged (any multipart upload the CreateMultipartUpload whose answer never came began) failed too (…), so it is left to the service's clean-up (see UploadError.AbortErr)", "", 1},
		{"starting the multipart upload: connection reset; nothing had been staged", InvPending, 0},
	} {
		res := synthetic(append(logStream("A", key, 3.9, nil, 4.5, false, c.err), startA)...)
		res.Pending = []PendingUpload{up}
		ch := CheckRun(res)
		if got := invariants(ch); got != c.want || ch.PendingReported != c.reported {
			t.Errorf("after %q: violations %q, reported %d; want %q, %d", c.err, got, ch.PendingReported, c.want, c.reported)
		}
		// The same for the lease's stream probe on a scratch key.
		scratchKey := "p0/LEASE.stream-probe-0123456789abcdef"
		res = synthetic(startA, Entry{T: 2 * int64(time.Second), Proc: "A", ID: "a", Ev: EvScratchStart, Prefix: "p0", Key: scratchKey},
			Entry{T: 3 * int64(time.Second), Proc: "A", ID: "a", Ev: EvScratchEnd, Prefix: "p0", Key: scratchKey, Err: "minio: put " + scratchKey + " (If-None-Match: *): " + c.err})
		res.Pending = []PendingUpload{{Label: "p0", Key: scratchKey, Name: "LEASE.stream-probe-0123456789abcdef", Upload: "multipart upload u2"}}
		ch = CheckRun(res)
		if got := invariants(ch); got != c.want || ch.PendingReported != c.reported {
			t.Errorf("scratch key, after %q: violations %q, reported %d; want %q, %d", c.err, got, ch.PendingReported, c.want, c.reported)
		}
	}
}

// The padding of a streamed chunk: exactly n newlines, produced no faster
// than its pace allows (a lower bound only: a loaded machine is slower).
func TestPaddingPace(t *testing.T) {
	const n = 3<<20 + 7
	pace := 200 * time.Millisecond
	p := &padding{n: n, total: n, pace: pace, start: time.Now()}
	t0 := time.Now()
	data, err := io.ReadAll(p)
	if err != nil || len(data) != n || bytes.Count(data, []byte{'\n'}) != n {
		t.Fatalf("read %d bytes (%v), want %d newlines", len(data), err, n)
	}
	if took := time.Since(t0); took < pace-paceStep {
		t.Errorf("the padding took %v, less than its pace %v", took, pace)
	}
}

// A drill kills B, the holder, at 10 s; the harness sees the lease move at
// 13 s. bucketlease hold took it then (its LEASE object's acquired_at,
// 12.9 s), but its command started and logged only at 15 s: hold held the
// lease in time. So did a worker whose acquire began at 12.9 s and returned
// only at 15 s; one that began only at 15 s did not.
func TestCheckerDrillCLI(t *testing.T) {
	s := float64(time.Second)
	at := func(x float64) int64 { return int64(x * s) }
	kill, moved := time.Unix(10, 0), time.Unix(13, 0)
	for _, c := range []struct {
		name  string
		extra []Entry
		want  string
		took  time.Duration // the takeover counted, where none is a violation
	}{
		{"hold took it in time, its command logged late", []Entry{
			{T: at(12.9), Proc: "C", ID: "c", Ev: EvAcquireStart, Prefix: "p0"},
			{T: at(15), Proc: "C", ID: "c", Ev: EvAcquireOK, Prefix: "p0", Epoch: 1, Kind: "cli"}}, "", 2900 * time.Millisecond},
		{"hold's attempt began before the kill, its command logged after", []Entry{
			{T: at(9.5), Proc: "C", ID: "c", Ev: EvAcquireStart, Prefix: "p0"},
			{T: at(12.9), Proc: "C", ID: "c", Ev: EvAcquireOK, Prefix: "p0", Epoch: 1, Kind: "cli"}}, "", 2900 * time.Millisecond},
		{"the command found the LEASE object naming another", []Entry{
			{T: at(12.9), Proc: "C", ID: "c", Ev: EvAcquireStart, Prefix: "p0"},
			{T: at(15), Proc: "C", ID: "c", Ev: EvAcquireOK, Prefix: "p0", Epoch: 1, Kind: "cli", Detail: "the LEASE object already names x"}}, InvLiveness, 0},
		{"a worker's acquire under way at the move returned late", []Entry{
			{T: at(12.9), Proc: "C", ID: "c", Ev: EvAcquireStart, Prefix: "p0"},
			{T: at(15), Proc: "C", ID: "c", Ev: EvAcquireOK, Prefix: "p0", Epoch: 1, Kind: "took-over", Detail: "took over a stale lease"}}, "", 3 * time.Second},
		// The negative control: the lease moved, but the only live worker
		// to take it began its acquire 2 s after the move and returned 3 s
		// after it, so no live contender accounts for the move in time.
		{"a worker's acquire began after the move", []Entry{
			{T: at(15), Proc: "C", ID: "c", Ev: EvAcquireStart, Prefix: "p0"},
			{T: at(16), Proc: "C", ID: "c", Ev: EvAcquireOK, Prefix: "p0", Epoch: 1, Kind: "took-over", Detail: "took over a stale lease"}}, InvLiveness, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := synthetic(c.extra...)
			res.Drills = []Drill{{Label: "p0", Kill: kill, Victims: []string{"b"}, Procs: []string{"B"}, Moved: moved}}
			ch := CheckRun(res)
			if got := invariants(ch); got != c.want {
				t.Fatalf("violations %q, want %q", got, c.want)
			}
			if c.want == "" && (len(ch.Takeovers) != 1 || ch.Takeovers[0] != c.took) {
				t.Errorf("takeovers %v, want [%v]", ch.Takeovers, c.took)
			}
		})
	}
}

// A worker's acquire that moved the lease and then ran out of the
// worker's own deadline: the lease named a live contender from the move,
// so the drill holds; anything less is still a violation.
func TestCheckerDrillTakerTimedOut(t *testing.T) {
	s := float64(time.Second)
	at := func(x float64) int64 { return int64(x * s) }
	kill, moved := time.Unix(10, 0), time.Unix(13, 0)
	const deadline = "acquire p0/LEASE: context deadline exceeded; the lease had been taken (version 7), and is now released"
	attempt := func(proc string, start, end float64, err string) []Entry {
		id := strings.ToLower(proc)
		return []Entry{
			{T: at(start), Proc: proc, ID: id, Ev: EvAcquireStart, Prefix: "p0"},
			{T: at(end), Proc: proc, ID: id, Ev: EvAcquireFail, Prefix: "p0", Err: err},
		}
	}
	for _, c := range []struct {
		name  string
		extra []Entry
		want  string
	}{
		{"the mover ran out of its deadline", attempt("C", 12, 16, deadline), ""},
		{"the mover failed otherwise", attempt("C", 12, 16, "acquire p0/LEASE: get: connection reset"), InvLiveness},
		{"the timed-out acquire began after the move", attempt("C", 13.5, 17.5, deadline), InvLiveness},
		{"the timed-out acquire was not the mover's", attempt("D", 12, 16, deadline), InvLiveness},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := synthetic(c.extra...)
			res.Drills = []Drill{{Label: "p0", Kill: kill, Victims: []string{"b"}, Procs: []string{"B"}, Moved: moved, MovedTo: "c"}}
			ch := CheckRun(res)
			if got := invariants(ch); got != c.want {
				t.Fatalf("violations %q, want %q", got, c.want)
			}
			if c.want == "" && (ch.TakersTimedOut != 1 || len(ch.Takeovers) != 1 || ch.Takeovers[0] != 3*time.Second) {
				t.Errorf("timed-out takers %d, takeovers %v; want 1, [3s]", ch.TakersTimedOut, ch.Takeovers)
			}
		})
	}
}

// A process started with a wall clock wrong from its start: its refusals
// with ErrClock are counted, and a lease it acquired is a clock violation.
func TestCheckerClockOffset(t *testing.T) {
	s := int64(time.Second)
	refused := []Entry{
		{T: 1 * s, Proc: "C", ID: "c", Ev: EvStart, Detail: "skew=100ms " + ClockOffsetSwitch + "1h0m0s"},
		{T: 3 * s, Proc: "C", ID: "c", Ev: EvAcquireStart, Prefix: "p0"},
		{T: 3*s + 1, Proc: "C", ID: "c", Ev: EvAcquireFail, Prefix: "p0", Err: "acquire p0/LEASE: the wall clock is not to be trusted: ...", Clock: true},
		{T: 4 * s, Proc: "C", ID: "c", Ev: EvAcquireStart, Prefix: "p0"},
		{T: 4*s + 1, Proc: "C", ID: "c", Ev: EvAcquireFail, Prefix: "p0", Err: "acquire p0/LEASE: the wall clock is not to be trusted: ...", Clock: true},
	}
	res := synthetic(refused...)
	res.Check = CheckRun(res)
	c := res.Check
	if got := invariants(c); got != "" {
		t.Fatalf("a process refused with ErrClock: violations %q, want none", got)
	}
	if c.ClockRefused != 2 || strings.Join(c.ClockRefusedProcs, ",") != "C" || strings.Join(c.ClockOffsetProcs, ",") != "C" {
		t.Fatalf("refused %d by %v, offset procs %v; want 2 by [C], [C]", c.ClockRefused, c.ClockRefusedProcs, c.ClockOffsetProcs)
	}
	if sum := res.Summary(); !strings.Contains(sum, "refused-clock=2 (procs C)") {
		t.Errorf("the summary does not count the refusals: %s", sum)
	}
	// The same process acquiring: the lease did not see its clock.
	held := append(refused[:1:1], Entry{T: 7 * s, Proc: "C", ID: "c", Ev: EvAcquireStart, Prefix: "p1"},
		Entry{T: 8 * s, Proc: "C", ID: "c", Ev: EvAcquireOK, Prefix: "p1", Epoch: 1, Kind: "acquired"})
	if got := invariants(CheckRun(synthetic(held...))); got != InvClock {
		t.Fatalf("a process with a wrong clock acquired: violations %q, want %q", got, InvClock)
	}
}

// A contender refused by a killed holder's record as fresh: excused until
// the record must be stale by every clock in the envelope (TTL + TTL/3)
// and on the service's clock (TTL + its resolution, rounded up to it),
// a violation after.
func TestCheckerDrillServiceResolution(t *testing.T) {
	if got := serviceAge(3*time.Second, 2*time.Second); got != 6*time.Second {
		t.Fatalf("serviceAge(3s, 2s) = %v, want 6s", got)
	}
	s := float64(time.Second)
	at := func(x float64) int64 { return int64(x * s) }
	kill := time.Unix(10, 0)
	for _, c := range []struct {
		name  string
		begun float64       // seconds after the kill
		res   time.Duration // the service clock's resolution
		want  string
	}{
		{"5s after, no service clock", 5, 0, InvLiveness},
		{"5s after, whole 2-second dates", 5, 2 * time.Second, ""},
		{"6.5s after, whole 2-second dates", 6.5, 2 * time.Second, InvLiveness},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := 10 + c.begun
			res := synthetic(
				Entry{T: at(start), Proc: "C", ID: "c", Ev: EvAcquireStart, Prefix: "p0"},
				Entry{T: at(start + 0.01), Proc: "C", ID: "c", Ev: EvAcquireFail, Prefix: "p0", Err: "held", State: "fresh", Holder: "b", ServiceRes: c.res},
				Entry{T: at(start + 0.5), Proc: "D", ID: "d", Ev: EvAcquireStart, Prefix: "p0"},
				Entry{T: at(start + 0.6), Proc: "D", ID: "d", Ev: EvAcquireOK, Prefix: "p0", Epoch: 1, Kind: "took-over"})
			res.Drills = []Drill{{Label: "p0", Kill: kill, Victims: []string{"b"}, Procs: []string{"B"}, Moved: time.Unix(0, at(start+0.6))}}
			if got := invariants(CheckRun(res)); got != c.want {
				t.Fatalf("violations %q, want %q", got, c.want)
			}
		})
	}
}

// The late check judged against the logs: A holds lease epoch 10 from 2 s,
// B takes over with epoch 11 (its acquire begun at 5 s, returned at 6 s),
// on a service whose clock reads in whole seconds.
func TestCheckerLateWrites(t *testing.T) {
	sec := func(f float64) time.Time { return time.Unix(0, int64(f*float64(time.Second))) }
	stamp := func(e uint64, id string) driver.Metadata {
		return admin.Stamp{Epoch: e, Instance: admin.StampedInstance(id)}.Metadata()
	}
	era11 := []admin.Era{{Epoch: 11, Began: sec(6.5)}}
	key := "p0/chunks/A.e1.b1/0"
	obj := func(md driver.Metadata, stored float64) Object {
		return Object{Label: "p0", Key: key, Name: "chunks/A.e1.b1/0", Version: "v1", Modified: sec(stored), Listed: sec(stored),
			Body: []byte("chunk proc=A epoch=1 tag=A.e1.b1 j=0"), Metadata: md}
	}
	cases := []struct {
		name      string
		start     float64 // A's write: began, returned
		end       float64
		o         Object
		leaseEras []admin.Era // what the LEASE object left at the end tells
		callEras  []admin.Era // what a record written during the run told
		want      string
		certain   int
		flagged   int
	}{
		{"stored a resolution after B's acquire returned, and flagged", 5.5, 8, obj(stamp(10, "a"), 8), era11, nil, "", 1, 1},
		{"the eras come from a record written during the run", 5.5, 8, obj(stamp(10, "a"), 8), nil, era11, "", 1, 1},
		{"stored late, but no record tells of B's era: missed", 5.5, 8, obj(stamp(10, "a"), 8), nil, nil, InvLateWrite, 1, 0},
		{"stored within the resolution of the takeover: either way", 5.5, 6.8, obj(stamp(10, "a"), 6.7), era11, nil, "", 0, 1},
		{"returned before B began, yet flagged by a wrong era: a false alarm", 3, 4, obj(stamp(10, "a"), 3.9), []admin.Era{{Epoch: 11, Began: sec(3)}}, nil, InvLateWrite, 0, 1},
		{"in time and not flagged", 3, 4, obj(stamp(10, "a"), 3.9), era11, nil, "", 0, 0},
		{"stamped with another lease's epoch", 3, 4, obj(stamp(11, "a"), 3.9), era11, nil, InvStamp, 0, 0},
		{"stamped with another instance", 3, 4, obj(stamp(10, "b"), 3.9), era11, nil, InvStamp, 0, 0},
		{"not stamped", 3, 4, obj(nil, 3.9), era11, nil, InvStamp, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			extra := logWrite("A", 1, key, "If-None-Match: *", c.start, c.end, true, false, "v1")
			if c.callEras != nil {
				extra = append(extra, Entry{T: int64(7 * time.Second), Proc: "B", ID: "b", Ev: EvLeaseCall, Prefix: "p0", Op: "put", Eras: c.callEras})
			}
			res := synthetic(extra...)
			for i := range res.Entries {
				if e := &res.Entries[i]; e.Ev == EvAcquireOK {
					e.LeaseEpoch = map[string]uint64{"A": 10, "B": 11}[e.Proc]
				}
			}
			res.Stamps = true
			res.Objects = []Object{c.o}
			rec := admin.Record{InstanceID: "b", Epoch: 12}
			if c.leaseEras != nil {
				rec.Before = c.leaseEras
			}
			res.Leases = map[string]admin.Status{"p0": {Record: &rec, Service: &admin.ServiceClock{Resolution: time.Second}}}
			ch := CheckRun(res)
			if got := invariants(ch); got != c.want {
				t.Errorf("violations %q, want %q", got, c.want)
				for _, v := range ch.Violations {
					t.Log(v.Detail)
				}
			}
			if ch.LateCertain != c.certain || ch.LateFlagged != c.flagged {
				t.Errorf("late-certain %d, late-flagged %d; want %d, %d", ch.LateCertain, ch.LateFlagged, c.certain, c.flagged)
			}
		})
	}
}
