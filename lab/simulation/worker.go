package simulation

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/internal/objects"
)

// The worker writes backups the way the spec says: every immutable object
// (a chunk) with If-None-Match: *, its manifest first with If-None-Match: *
// and then sealed with If-Match against the version it last wrote, and
// LATEST with If-Match against the version it read at the start (or
// If-None-Match: * when there was none). Each write starts only while the
// worker's gate is open (MayWrite), through the lease's fenced bucket.
//
// Keys: chunks/<k>.<tag>/<j>, manifests/<k>.<tag>, LATEST, where k is the
// backup's number (LATEST's plus one) and tag names the writer's backup
// attempt.

const nChunks = 3

var latestKey = prefix + "/LATEST"

// rel is key relative to the prefix, as Lease.Bucket takes it.
func rel(key string) string { return strings.TrimPrefix(key, prefix+"/") }

type cycle struct {
	stage     int
	tag       string
	k         int
	parent    string
	hasLatest bool
	vLatest   driver.Version
	mkey      string
	vM        driver.Version
	chunks    []string // key:sum
	sent      []byte   // the bytes of the write in flight
}

type pendingWrite struct {
	key   string
	data  []byte
	cond  driver.Condition
	epoch int
}

func sum(data []byte) string { return strconv.FormatUint(hash(string(data)), 16) }

// fields parses "kind a=1 b=2" into a map.
func fields(data []byte) map[string]string {
	m := map[string]string{}
	for _, f := range strings.Fields(string(data)) {
		if k, v, ok := strings.Cut(f, "="); ok {
			m[k] = v
		}
	}
	return m
}

func (in *inst) manifest(w *cycle, sealed bool, epoch int) []byte {
	return fmt.Appendf(nil, "manifest k=%d tag=%s epoch=%d parent=%s sealed=%v chunks=%s",
		w.k, w.tag, epoch, w.parent, sealed, strings.Join(w.chunks, ","))
}

// workStep sends the worker's next request.
func (in *inst) workStep() {
	s := in.s
	if in.work == nil {
		in.tags++
		in.work = &cycle{tag: fmt.Sprintf("%s@%s.%d.%d", in.id, in.name, in.inc, in.tags)}
	}
	w := in.work
	if !in.gateOpen() {
		s.tracef("%s worker: may not write; abandons backup %s at stage %d", in, w.tag, w.stage)
		in.work, in.nextW = nil, s.now+retryInterval(s.cfg.TTL)
		return
	}
	in.nextW = s.now + s.cfg.Tick
	epoch := in.epoch
	if w.stage == 0 {
		var (
			data []byte
			v    driver.Version
			err  error
		)
		b := in.lease.Bucket().Driver()
		in.call("worker", func() {
			var a driver.Attrs
			data, a, err = objects.ReadAll(context.Background(), b, rel(latestKey), 1<<20, driver.GetOptions{})
			v = a.Version
		})
		switch {
		case err == nil:
			f := fields(data)
			k, _ := strconv.Atoi(f["k"])
			w.k, w.parent, w.hasLatest, w.vLatest = k+1, f["manifest"], true, v
		case isNotExist(err):
			w.k = 1
		default:
			in.abandon(err)
			return
		}
		w.mkey = fmt.Sprintf("%s/manifests/%d.%s", prefix, w.k, w.tag)
		w.stage++
		return
	}
	if w.stage == nChunks+5 {
		in.retention(w)
		return
	}
	var (
		key  string
		data []byte
		cond driver.Condition
	)
	switch {
	case w.stage == nChunks+1:
		key, data, cond = sharedKey(w.k), fmt.Appendf(nil, "shared c=%d", w.k%nShared), driver.IfAbsent()
	case w.stage <= nChunks:
		key = fmt.Sprintf("%s/chunks/%d.%s/%d", prefix, w.k, w.tag, w.stage-1)
		data = fmt.Appendf(nil, "chunk tag=%s j=%d epoch=%d", w.tag, w.stage-1, epoch)
		cond = driver.IfAbsent()
	case w.stage == nChunks+2:
		key, data, cond = w.mkey, in.manifest(w, false, epoch), driver.IfAbsent()
	case w.stage == nChunks+3:
		key, data, cond = w.mkey, in.manifest(w, true, epoch), driver.IfMatch(w.vM)
	default:
		key = latestKey
		data = fmt.Appendf(nil, "latest k=%d manifest=%s epoch=%d", w.k, w.mkey, epoch)
		cond = driver.IfAbsent()
		if w.hasLatest {
			cond = driver.IfMatch(w.vLatest)
		}
	}
	w.sent = data
	if !s.calm && s.rng.Float64() < 0.02 && !in.machineBusy() {
		// The machine freezes after the fence check, before the request
		// leaves: it is sent when the machine wakes, whatever the lease
		// says by then. Every process on the machine freezes with it.
		d := s.randDur(2 * s.cfg.TTL)
		in.paused = &pendingWrite{key: key, data: data, cond: cond, epoch: epoch}
		in.host().suspendedUntil = s.now + d
		s.fault("paused-after-fence-check")
		s.tracef("%s worker: passed the fence check for %s, then freezes for %v", in, key, d)
		return
	}
	var (
		v   driver.Version
		err error
	)
	if s.cfg.WorkerIgnoresFence {
		c := in.conn()
		in.call("worker", func() { v, err = putVersion(c.Put(context.Background(), key, data, driver.PutOptions{If: cond})) })
	} else {
		l := in.lease
		in.writingUnder = l
		in.call("worker", func() {
			v, err = putVersion(l.Bucket().Driver().Put(context.Background(), rel(key), data, driver.PutOptions{If: cond}))
		})
		in.writingUnder = nil
	}
	if in.shutdown != nil {
		in.finishShutdown()
		return
	}
	in.wrote(v, err)
}

// sendPaused sends a write that passed its fence check before the machine
// froze.
func (in *inst) sendPaused(p *pendingWrite) {
	in.s.tracef("%s wakes and sends the write it had started: %s (epoch %d)", in, p.key, p.epoch)
	var (
		v   driver.Version
		err error
	)
	c := in.conn()
	in.call("paused write", func() { v, err = putVersion(c.Put(context.Background(), p.key, p.data, driver.PutOptions{If: p.cond})) })
	if in.work != nil {
		in.wrote(v, err)
	}
}

// putVersion is the version a Put returned, with its error.
func putVersion(a driver.Attrs, err error) (driver.Version, error) { return a.Version, err }

func (in *inst) abandon(err error) {
	s := in.s
	s.tracef("%s worker: abandons backup %s at stage %d: %v", in, in.work.tag, in.work.stage, err)
	in.work, in.nextW = nil, s.now+s.randDur(4*time.Second)
}

// wrote handles the answer to the current stage's write.
func (in *inst) wrote(v driver.Version, err error) {
	s := in.s
	w := in.work
	if w == nil {
		return
	}
	if err != nil && w.stage == nChunks+1 && errors.Is(err, driver.ErrPrecondition) {
		err = nil // the shared chunk exists already: named, not written again
	}
	if err != nil {
		in.abandon(err)
		return
	}
	switch {
	case w.stage <= nChunks:
		w.chunks = append(w.chunks, fmt.Sprintf("%s/chunks/%d.%s/%d:%s", prefix, w.k, w.tag, w.stage-1, sum(w.sent)))
	case w.stage == nChunks+1:
		w.chunks = append(w.chunks, fmt.Sprintf("%s:%s", sharedKey(w.k), sum(w.sent)))
	case w.stage <= nChunks+3:
		w.vM = v
	default:
		s.tracef("%s worker: backup %d (%s) is LATEST", in, w.k, w.tag)
		// Retention next: the shared chunk no kept backup names.
	}
	w.stage++
}

// nShared is how many shared chunks backups cycle through: backup k names
// shared/<k mod nShared>, written with If-None-Match: * and, if it exists
// already (another backup's, of any writer), named as it is.
const nShared = 4

func sharedKey(k int) string { return fmt.Sprintf("%s/shared/%d", prefix, k%nShared) }

// retention deletes, through the fenced bucket, the shared chunk that the
// kept backups (the one just committed, k, and its parent) do not name:
// shared/<k+1 mod nShared>, which backup k+1 will write again. A late
// delete (one that lands after a successor's backup k+1 named the chunk
// it found) leaves LATEST naming a missing chunk: the integrity invariant.
// A retention delete is never paused between its fence check and its
// request: a paused process's late delete is what no lease can stop.
func (in *inst) retention(w *cycle) {
	s := in.s
	key := sharedKey(w.k + 1)
	l := in.lease
	var err error
	in.writingUnder = l
	in.call("worker", func() { err = l.Bucket().Driver().Delete(context.Background(), rel(key), driver.Condition{}) })
	in.writingUnder = nil
	if in.shutdown != nil {
		in.finishShutdown()
		return
	}
	s.tracef("%s worker: retention deletes %s: %v", in, key, err)
	in.work, in.nextW = nil, s.now+s.randDur(4*time.Second)
}

func isNotExist(err error) bool { return errors.Is(err, driver.ErrNotExist) }

// landed checks the data invariants on a write that the store applied.
func (s *sim) landed(in *inst, key string, data []byte) {
	f := fields(data)
	switch {
	case strings.HasPrefix(key, prefix+"/chunks/"):
		if prev, ok := s.written[key]; ok {
			s.violate(InvImmutable, fmt.Sprintf("immutable object %s written twice (first by %s, now by %s)", key, prev, f["tag"]), true)
		}
		s.written[key] = f["tag"]
	case strings.HasPrefix(key, prefix+"/manifests/"):
		if !strings.HasSuffix(key, "."+f["tag"]) {
			s.violate(InvImmutable, fmt.Sprintf("manifest %s overwritten by another writer's backup %s", key, f["tag"]), true)
		}
	case key == latestKey:
		e, _ := strconv.Atoi(f["epoch"])
		s.res.Backups++
		if e < s.maxLatestEpoch {
			s.violate(InvLatest, fmt.Sprintf("LATEST moved back to %s of a stale holder (epoch %d) after a successor (epoch %d) wrote its own",
				f["manifest"], e, s.maxLatestEpoch), true)
		}
		s.maxLatestEpoch = max(s.maxLatestEpoch, e)
	}
}

// checkIntegrity verifies that the manifest LATEST names, its chunks and
// its parent are intact.
func (s *sim) checkIntegrity() {
	if !s.dirty {
		return
	}
	s.dirty = false
	data, _, err := readAll(s, latestKey)
	if err != nil {
		return
	}
	l := fields(data)
	mdata, _, err := readAll(s, l["manifest"])
	if err != nil {
		s.violate(InvIntegrity, fmt.Sprintf("LATEST names %s, which does not exist", l["manifest"]), true)
	}
	m := fields(mdata)
	if m["sealed"] != "true" || m["k"] != l["k"] {
		s.violate(InvIntegrity, fmt.Sprintf("LATEST (k=%s) names manifest %q that is not a sealed backup k=%s", l["k"], mdata, l["k"]), true)
	}
	for _, c := range strings.Split(m["chunks"], ",") {
		key, want, _ := strings.Cut(c, ":")
		cdata, _, err := readAll(s, key)
		if err != nil || sum(cdata) != want {
			s.violate(InvIntegrity, fmt.Sprintf("manifest %s names chunk %s, which is missing or changed (%q)", l["manifest"], key, cdata), true)
		}
	}
	if p := m["parent"]; p != "" {
		pdata, _, err := readAll(s, p)
		if err != nil || fields(pdata)["sealed"] != "true" {
			s.violate(InvIntegrity, fmt.Sprintf("manifest %s has parent %s, which is missing or unsealed", l["manifest"], p), true)
		}
	}
}
