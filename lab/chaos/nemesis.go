//go:build linux

package chaos

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"time"
)

// The nemesis's actions.
const (
	ActPause      = "pause"        // SIGSTOP, SIGCONT after Dur
	ActPauseTerm  = "pause-term"   // SIGSTOP, SIGCONT after Dur, SIGTERM at once; restart after Dur2 with the same id
	ActKillSame   = "kill-same-id" // SIGKILL; restart after Dur with the same id
	ActKillNew    = "kill-new-id"  // SIGKILL; restart after Dur with a new id
	ActTerm       = "term"         // SIGTERM (release and exit); restart after Dur with the same id
	ActPartition  = "partition"    // the worker's proxy cuts it off for Dur
	ActDelay      = "delay"        // the proxy delays each chunk by Delay, each direction, for Dur
	ActDropReply  = "drop-replies" // the proxy forwards requests and drops the answers, for Dur
	ActReset      = "reset"        // the proxy resets every connection
	ActDuplicate  = "duplicate-id" // a second process with the worker's id runs for Dur
	ActDrill      = "drill"        // calm: every fault healed, the holder of p0 killed, the takeover timed
	ActPauseHold  = "pause-holder" // controls: the holder of p0 is paused for Dur (then terminated if Term)
	actHeal       = "heal"
	actFollowUp   = "follow-up"
	maxPhaseActs  = 400
	maxDrillPolls = 1000
)

// Action is one step of the nemesis's schedule. Its time is an offset from
// the start of the run.
type Action struct {
	At    time.Duration
	Kind  string
	Slot  int
	Dur   time.Duration
	Dur2  time.Duration
	Delay time.Duration
	Term  bool // pause-holder: SIGTERM after SIGCONT
	// Holder aims the action at whichever worker the LEASE object of
	// label Slot names when it is carried out, instead of worker Slot.
	Holder bool
}

// String renders the action on one line, as schedules print it.
func (a Action) String() string {
	s := fmt.Sprintf("+%-8v %-13s", a.At.Round(time.Millisecond), a.Kind)
	switch {
	case a.Kind == ActDrill || a.Kind == ActPauseHold:
	case a.Holder:
		s += fmt.Sprintf(" holder-of-p%d", a.Slot)
	default:
		s += fmt.Sprintf(" w%d", a.Slot)
	}
	if a.Dur > 0 {
		s += fmt.Sprintf(" for %v", a.Dur.Round(time.Millisecond))
	}
	if a.Dur2 > 0 {
		s += fmt.Sprintf(" then %v", a.Dur2.Round(time.Millisecond))
	}
	if a.Delay > 0 {
		s += fmt.Sprintf(" delay %v", a.Delay.Round(time.Millisecond))
	}
	if a.Term {
		s += " then SIGTERM"
	}
	return s
}

// Schedule returns the nemesis's schedule for a seed: phases of chaos of
// eight TTLs, each followed by a takeover drill, until duration. It is a
// pure function of its arguments, so a seed names one schedule. Controls
// get their own, simpler schedule (see Config.Control).
func Schedule(seed uint64, duration, ttl time.Duration, workers, leases int, control string) []Action {
	rng := rand.New(rand.NewPCG(seed, 0xc4a05))
	dur := func(lo, hi time.Duration) time.Duration {
		return lo + time.Duration(rng.Int64N(int64(hi-lo)+1))
	}
	var acts []Action
	switch control {
	case ControlFenceDisabled:
		// Pause whoever holds p0 for 3 TTL, every four, from the
		// second TTL on (a first acquire waits up to a resolution of the
		// service's clock to settle its epoch). That is long enough for
		// it to wake well after it was taken over (a takeover waits TTL
		// plus that resolution after the last renewal), so that what it
		// writes unfenced on waking lands late by more than the
		// resolution, which the late check must find (late-write).
		for at := 2 * ttl; at < duration-3*ttl && len(acts) < maxPhaseActs; at += 4 * ttl {
			acts = append(acts, Action{At: at, Kind: ActPauseHold, Dur: 3 * ttl})
		}
		return acts
	case ControlFencedRelease, ControlStreamUnfenced:
		// Pause whoever holds p0 for 1.5 TTL, long enough to be taken
		// over, every three TTLs.
		for at := ttl; at < duration-3*ttl/2 && len(acts) < maxPhaseActs; at += 3 * ttl {
			acts = append(acts, Action{At: at, Kind: ActPauseHold, Dur: 3 * ttl / 2, Term: control == ControlFencedRelease})
		}
		return acts
	case ControlTwins:
		// A twin of the holder of p0, every three TTLs, for two.
		for at := ttl; at < duration-ttl && len(acts) < maxPhaseActs; at += 3 * ttl {
			acts = append(acts, Action{At: at, Kind: ActDuplicate, Holder: true, Slot: 0, Dur: 2 * ttl})
		}
		return acts
	case ControlSkewBeyond:
		// Worker 0, whose clock runs ahead, takes over healthy holders;
		// stop and restart it every TTL so that it does so again and
		// again rather than keep the leases.
		for at := 3 * ttl / 2; at < duration-ttl && len(acts) < maxPhaseActs; at += ttl {
			acts = append(acts, Action{At: at, Kind: ActTerm, Slot: 0, Dur: ttl / 4})
		}
		return acts
	case "":
	default:
		return nil // the control alone is the fault
	}
	phase := 8 * ttl
	if duration < 13*ttl { // a short run: one shorter phase, then a drill
		phase = max(3*ttl, duration-5*ttl)
	}
	drillTime := 5 * ttl // a bound for planning; a drill ends as soon as the lease moved
	for start := time.Duration(0); start+phase/2 < duration; start += phase + drillTime {
		n := 0
		for at := start + dur(ttl/4, ttl); at < start+phase-ttl && at < duration && n < maxPhaseActs; at += dur(ttl/4, ttl) {
			n++
			a := Action{At: at, Slot: rng.IntN(workers)}
			if rng.IntN(2) == 0 {
				// Half the actions hit a holder, where faults matter.
				a.Holder, a.Slot = true, rng.IntN(leases)
			}
			switch r := rng.IntN(100); {
			case r < 16:
				a.Kind, a.Dur = ActPause, dur(ttl/4, 2*ttl)
			case r < 24:
				a.Kind, a.Dur, a.Dur2 = ActPauseTerm, dur(ttl, 2*ttl), dur(ttl/4, ttl)
			case r < 32:
				a.Kind, a.Dur = ActKillSame, dur(ttl/4, ttl)
			case r < 38:
				a.Kind, a.Dur = ActKillNew, dur(ttl/4, ttl)
			case r < 44:
				a.Kind, a.Dur = ActTerm, dur(ttl/4, ttl)
			case r < 58:
				a.Kind, a.Dur = ActPartition, dur(ttl/2, 2*ttl)
			case r < 72:
				a.Kind, a.Dur, a.Delay = ActDelay, dur(ttl, 3*ttl), dur(ttl/20, ttl/4)
			case r < 82:
				a.Kind, a.Dur = ActDropReply, dur(ttl/4, ttl)
			case r < 92:
				a.Kind = ActReset
			default:
				a.Kind, a.Dur = ActDuplicate, dur(ttl, 3*ttl)
			}
			acts = append(acts, a)
		}
		if start+phase < duration {
			acts = append(acts, Action{At: start + phase, Kind: ActDrill})
		}
	}
	sort.SliceStable(acts, func(i, j int) bool { return acts[i].At < acts[j].At })
	return acts
}

// Skews returns each worker slot's clock offset for a seed: within an
// envelope of width TTL/3 (±TTL/6), the spec's bound, or for the
// skew-beyond control, slot 0 ahead by 0.9 TTL.
func Skews(seed uint64, ttl time.Duration, workers int, control string) []time.Duration {
	rng := rand.New(rand.NewPCG(seed, 0x5c3e))
	half := ttl / 6
	out := make([]time.Duration, workers)
	for i := range out {
		out[i] = time.Duration(rng.Int64N(int64(2*half)+1)) - half
	}
	if control == ControlSkewBeyond && workers > 0 {
		out[0] = ttl * 9 / 10
	}
	return out
}

// ClockOffsets returns each worker slot's wall clock wrong from the start
// (WorkerConfig.ClockOffset): in a normal run (no control, not
// SaneClocks) slot 1's is an hour ahead and slot 2's an hour behind, far
// outside the skew envelope; the lease must refuse both with ErrClock
// (the checker's clock invariant). The others, slot 0 (the skew-beyond
// control's), the last (bucketlease hold's, when it runs) and any beyond,
// read sane clocks, so that each prefix keeps at least two contenders that
// may take a drill's victim's lease over.
func ClockOffsets(cfg Config) []time.Duration {
	out := make([]time.Duration, cfg.Workers)
	if cfg.Control != "" || cfg.SaneClocks || cfg.Workers < 5 {
		return out
	}
	out[1], out[2] = time.Hour, -time.Hour
	return out
}

// FormatSchedule renders actions one per line.
func FormatSchedule(acts []Action) string {
	var b strings.Builder
	for _, a := range acts {
		b.WriteString("  " + a.String() + "\n")
	}
	return b.String()
}
