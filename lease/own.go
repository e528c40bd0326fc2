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

// Ownership of a record is proven by its content, never by the instance id
// alone: two processes can be configured with one id (two containers with
// one hostname, a cloned machine), and a Lease that was fenced and then
// acquired again by its Contender must not take the newer lease for its own.
//
// Every record a Contender writes is unique: renewed_at increases strictly
// across all of the contender's writes (a stuck or coarse clock is bumped by
// a nanosecond), and acquired_at carries a random fraction of a second that
// names the lease incarnation, so that two processes with one id and one
// stuck clock still write different records. A record read back is ours
// only if it is exactly one that we sent.

// maxSent bounds how many records a writer remembers having sent. Only the
// records sent since the last write it knows landed can still land, so a
// short memory suffices; forgetting one can only make a record look foreign
// (the safe direction: a lease lost, never a lease shared).
const maxSent = 64

// sentRecords remembers the records one writer (a Contender's attempts, or
// one Lease) sent.
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

// forgetAllBut remembers only r: a write of r landed, so no earlier record
// can land any more (each was sent with If-Match on a version r replaced).
func (s *sentRecords) forgetAllBut(r admin.Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recs = append(s.recs[:0], r)
}

// stamps makes the times one Contender writes into its records, and
// watches the clock they come from.
type stamps struct {
	rand io.Reader // source of acquired_at's random fraction

	mu   sync.Mutex
	last time.Time // the latest renewed_at stamped

	// The latest reading of both clocks that clockProblem passed: at a
	// later monotonic time mono the wall clock should read about
	// readWall + (mono - readMono).
	readMono time.Duration
	readWall time.Time
	read     bool
	// behind, once a step back was seen: the wall-clock time the clock
	// should have read then. It must read within a third of a TTL of
	// that again before records may be stamped from it.
	behind time.Time
}

// clockProblem says why records stamped from the clock reading (mono,
// wall) would lie, or is "". Records are stamped from the wall clock and
// readers judge them by theirs, which the spec lets differ by a third of a
// TTL; a clock that reads more than that before where it should is
// refused:
//   - before the latest renewed_at this contender stamped (stepped back
//     since it last wrote);
//   - behind where the monotonic clock says it should be since the
//     latest reading that passed (stepped back or stuck, even in a
//     contender that has written nothing yet: a process started beside
//     a holder that takes over trusting a clock an hour back would stamp
//     a record that looks stale at once).
//
// Both pass again once the clock reads within a third of a TTL of where it
// should have read when the step was seen (it caught up, or was stepped
// forward again). What no reading can show is a clock that was already
// wrong when the process started.
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

// note takes a first reading of the clock, from which later readings are
// judged.
func (s *stamps) note(mono time.Duration, wall time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.read {
		s.readMono, s.readWall, s.read = mono, wall, true
	}
}

// renewed returns the renewed_at for a write sent at wall: wall itself, or,
// if the clock has not moved past the previous stamp (stuck, coarse, or
// stepped back), a nanosecond after that stamp. It is never earlier than
// wall, so a reader never sees the lease older than it is.
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

// acquired returns the acquired_at of a new lease incarnation at wall: the
// second of wall, with a random fraction that names this incarnation.
func (s *stamps) acquired(wall time.Time) time.Time {
	var b [8]byte
	if _, err := io.ReadFull(s.rand, b[:]); err != nil {
		// A broken random source must not make two incarnations alike:
		// fall back to the clock's own fraction (unique unless it is
		// stuck, and then renewed_at still tells writes apart within
		// one process).
		return wall.Round(0).UTC()
	}
	frac := time.Duration(binary.BigEndian.Uint64(b[:]) % uint64(time.Second))
	return wall.Round(0).UTC().Truncate(time.Second).Add(frac)
}

// landed reports whether the stored record cur, at version curV, is our
// write of sent over version over: exactly our record, at a new version.
func landed(cur, sent admin.Record, curV, over driver.Version) bool {
	return cur.Same(sent) && curV != over
}
