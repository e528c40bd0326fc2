package lease

import (
	"encoding/binary"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// Ownership is proven by content, never by the instance id alone (two
// processes may share an id; a refenced Lease must not claim its
// Contender's newer lease). Every record a Contender writes is unique:
// renewed_at increases strictly, and acquired_at carries a random fraction
// naming the incarnation. A record is ours only if it is exactly one we sent.

// maxSent bounds the records a writer remembers; only those sent since its
// last known landed write can still land, and forgetting one only makes a
// record look foreign (a lease lost, never shared).
const maxSent = 64

// sentRecords remembers the records one writer sent.
type sentRecords struct {
	journal *journal // where records are noted before they are sent, if a StateDir is set
	mu      sync.Mutex
	recs    []admin.Record
}

// add remembers r, and notes it in the journal first.
func (s *sentRecords) add(r admin.Record) {
	s.journal.record(r)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.recs) == maxSent {
		s.recs = append(s.recs[:0], s.recs[1:]...)
	}
	s.recs = append(s.recs, r)
}

// has reports whether r is exactly a record that was sent.
func (s *sentRecords) has(r admin.Record) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range s.recs {
		if x.Same(r) {
			return true
		}
	}
	return false
}

// forgetAllBut keeps only r, which landed: every earlier record was sent
// with If-Match on a version r replaced.
func (s *sentRecords) forgetAllBut(r admin.Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recs = append(s.recs[:0], r)
}

// stamps makes one Contender's record times and watches their clock.
type stamps struct {
	rand io.Reader // source of acquired_at's random fraction

	mu   sync.Mutex
	last time.Time // the latest renewed_at stamped

	// The latest reading clockProblem passed: at monotonic mono the wall
	// clock should read about readWall + (mono - readMono).
	readMono time.Duration
	readWall time.Time
	read     bool
	// behind: after a step back, where the clock should have read; it must
	// come within a third of a TTL of that before stamping again.
	behind time.Time
}

// clockProblem says why records stamped at (mono, wall) would lie, or is "":
// the wall clock reads more than a third of a TTL (the skew readers allow)
// before the latest renewed_at stamped, or behind where the monotonic clock
// says it should be, even before any write. It passes again once the clock
// is back within a third of a TTL. A clock wrong from the start is not seen.
func (s *stamps) clockProblem(mono time.Duration, wall time.Time, ttl time.Duration) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if back := s.last.Sub(wall); back > ttl/3 {
		return fmt.Sprintf("the wall clock reads %v before the latest record this process stamped (it was stepped back), more than the third of a TTL that readers' clocks may differ by: records stamped from it would make the lease look older than it is",
			back.Round(time.Millisecond))
	}
	if !s.behind.IsZero() {
		if back := s.behind.Sub(wall); back > ttl/3 {
			return fmt.Sprintf("the wall clock reads %v before where it should (it was stepped back or stood still while the monotonic clock ran), more than the third of a TTL that readers' clocks may differ by: records stamped from it would make the lease look older than it is",
				back.Round(time.Millisecond))
		}
		s.behind = time.Time{}
		s.readMono, s.readWall, s.read = mono, wall, true
		return ""
	}
	if s.read && mono >= s.readMono {
		should := s.readWall.Add(mono - s.readMono)
		if back := should.Sub(wall); back > ttl/3 {
			s.behind = should
			return fmt.Sprintf("the wall clock moved %v less than the monotonic clock since this process last read it (stepped back or stuck), more than the third of a TTL that readers' clocks may differ by: records stamped from it would make the lease look older than it is",
				back.Round(time.Millisecond))
		}
	}
	if !s.read || mono > s.readMono {
		s.readMono, s.readWall, s.read = mono, wall, true
	}
	return ""
}

// note takes the first reading later readings are judged from.
func (s *stamps) note(mono time.Duration, wall time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.read {
		s.readMono, s.readWall, s.read = mono, wall, true
	}
}

// renewed returns the renewed_at for a write at wall: wall, or a nanosecond
// past the previous stamp if the clock has not moved past it; never earlier
// than wall, so the lease never looks older than it is.
func (s *stamps) renewed(wall time.Time) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := wall.Round(0).UTC()
	if !t.After(s.last) {
		t = s.last.Add(time.Nanosecond)
	}
	s.last = t
	return t
}

// acquired returns a new incarnation's acquired_at: wall's second plus a
// random fraction.
func (s *stamps) acquired(wall time.Time) time.Time {
	var b [8]byte
	if _, err := io.ReadFull(s.rand, b[:]); err != nil {
		// A broken random source falls back to the clock's fraction;
		// renewed_at still tells one process's writes apart.
		return wall.Round(0).UTC()
	}
	frac := time.Duration(binary.BigEndian.Uint64(b[:]) % uint64(time.Second))
	return wall.Round(0).UTC().Truncate(time.Second).Add(frac)
}

// landed reports whether cur, at curV, is our write of sent over version
// over.
func landed(cur, sent admin.Record, curV, over driver.Version) bool {
	return cur.Same(sent) && curV != over
}
