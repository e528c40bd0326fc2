package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/exitcode"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/term"
	"github.com/mushroomdb/bucketlease/lease"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// A Printer writes what happens to a lease, one line per change: text for
// people, or JSON lines for scripts (--json). It is safe for concurrent
// use: the lease reports from its own goroutines.
type Printer struct {
	mu      sync.Mutex
	w       io.Writer
	json    bool
	verbose bool
	// broken is set once the lease was found broken by an operator.
	broken atomic.Bool
	// queue, once start was called, hands lines to a writer goroutine, so
	// that an output nobody reads (a full pipe) never blocks the lease's
	// renewals, which report through OnEvent synchronously. A line that
	// does not fit is dropped and counted.
	queue   chan []byte
	flushed chan struct{}
	dropped atomic.Int64
}

// NewPrinter returns a Printer that writes to w: JSON lines with asJSON,
// and every renewal too with verbose.
func NewPrinter(w io.Writer, asJSON, verbose bool) *Printer {
	return &Printer{w: w, json: asJSON, verbose: verbose}
}

// Broken reports whether an event said the lease was broken by an
// operator (bucketlease break).
func (p *Printer) Broken() bool { return p.broken.Load() }

// printerQueue is how many lines may wait for a slow output.
const printerQueue = 1024

// Start makes the Printer hand its lines to a goroutine of its own.
func (p *Printer) Start() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.queue, p.flushed = make(chan []byte, printerQueue), make(chan struct{})
	go func(q <-chan []byte, done chan<- struct{}) {
		defer close(done)
		for b := range q {
			_, _ = p.w.Write(b) // an output that fails is not hold's to fix
		}
	}(p.queue, p.flushed)
}

// Close writes out what is queued, waiting at most d for a slow output,
// and makes emit write directly again.
func (p *Printer) Close(d time.Duration) {
	p.mu.Lock()
	q, done := p.queue, p.flushed
	p.queue = nil
	p.mu.Unlock()
	if q == nil {
		return
	}
	close(q)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// Record is one JSON line. Empty fields are left out.
type Record struct {
	Time             string `json:"time"`
	Event            string `json:"event"`
	Key              string `json:"key,omitempty"`
	Instance         string `json:"instance,omitempty"`
	Version          string `json:"version,omitempty"`
	PreviousInstance string `json:"previous_instance,omitempty"`
	Holder           string `json:"holder,omitempty"`
	State            string `json:"state,omitempty"`
	TakeoverAt       string `json:"takeover_at,omitempty"`
	Exclusion        string `json:"exclusion,omitempty"`
	Clocks           string `json:"clocks,omitempty"` // "service" or "assumed synchronised"
	TTLSeconds       int64  `json:"ttl_s,omitempty"`
	Epoch            uint64 `json:"epoch,omitempty"`
	PID              int    `json:"pid,omitempty"`
	Status           *int   `json:"status,omitempty"`
	Signal           string `json:"signal,omitempty"`
	Detail           string `json:"detail,omitempty"`
	Error            string `json:"error,omitempty"`
	Message          string `json:"message"`
}

// emit writes r as JSON, or its message as a text line.
func (p *Printer) emit(t time.Time, r Record) {
	r.Time = t.UTC().Format(time.RFC3339)
	var line []byte
	if p.json {
		b, _ := json.Marshal(r) // a Record always marshals
		line = append(b, '\n')
	} else {
		line = fmt.Appendf(nil, "%s  %-16s %s\n", r.Time, r.Event, term.Safe(r.Message))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.queue == nil {
		_, _ = p.w.Write(line)
		return
	}
	select {
	case p.queue <- line:
	default:
		p.dropped.Add(1)
	}
}

// Event prints a lease event. Renewals are printed only when verbose.
// The lease's own released and release-failed events are not printed:
// hold reports the release itself, once it has read the lease object back
// (the lease's released event also covers a Record that was already
// someone else's), or the failure with its cause and exit 125.
func (p *Printer) Event(ev lease.Event) {
	switch {
	case ev.Kind == lease.EventRenewed && !p.verbose,
		ev.Kind == lease.EventReleased, ev.Kind == lease.EventReleaseFailed:
		return
	}
	r := Record{Event: ev.Kind.String(), Key: ev.Key, Instance: ev.InstanceID, Version: string(ev.Version), Detail: ev.Detail}
	if ev.Previous != nil {
		r.PreviousInstance = ev.Previous.InstanceID
	}
	if ev.Err != nil {
		r.Error = ev.Err.Error()
	}
	r.Message = eventMessage(ev)
	if ev.Kind == lease.EventLost && ev.Previous != nil && ev.Previous.InstanceID == admin.BreakerID {
		p.broken.Store(true)
	}
	p.emit(ev.Time, r)
}

// eventMessage says what an event means, in words.
func eventMessage(ev lease.Event) string {
	switch ev.Kind {
	case lease.EventAcquired:
		msg := fmt.Sprintf("acquired lease %s as instance %s (version %s)", ev.Key, ev.InstanceID, ev.Version)
		if ev.Detail != "" {
			msg += ": " + ev.Detail
		}
		return msg
	case lease.EventTookOver:
		return fmt.Sprintf("instance %s %s (lease %s)", ev.InstanceID, ev.Detail, ev.Key)
	case lease.EventRenewed:
		return fmt.Sprintf("renewed lease %s (version %s)", ev.Key, ev.Version)
	case lease.EventRenewalFailed:
		return fmt.Sprintf("renewal of %s failing: %v; %s", ev.Key, ev.Err, ev.Detail)
	case lease.EventFenced:
		return fmt.Sprintf("fenced: no renewal of %s succeeded within two thirds of the TTL; writing stops now, before anyone may take the lease over", ev.Key)
	case lease.EventLost:
		switch {
		case ev.Previous != nil && ev.Previous.InstanceID == admin.BreakerID:
			return fmt.Sprintf("lease %s was broken by an operator (bucketlease break); writing stops now", ev.Key)
		case errors.Is(ev.Err, lease.ErrInstanceInUse) || ev.Previous != nil && ev.Previous.InstanceID == ev.InstanceID:
			return fmt.Sprintf("lost lease %s to another live process using the same instance id %s; writing stops now. Give each process its own --instance-id", ev.Key, ev.InstanceID)
		}
		if ev.Previous != nil {
			return fmt.Sprintf("lost lease %s to instance %s (%s); writing stops now", ev.Key, ev.Previous.InstanceID, ev.Detail)
		}
		return fmt.Sprintf("lost lease %s: %s; writing stops now", ev.Key, ev.Detail)
	case lease.EventReleased:
		return fmt.Sprintf("released lease %s", ev.Key)
	default:
		return ev.Kind.String()
	}
}

// Held prints who holds the lease while hold waits for it.
func (p *Printer) Held(h *lease.HeldError, waiting bool) {
	r := Record{Event: "held", Key: h.Key, Holder: h.Holder(), State: h.State.String(), Version: string(h.Version),
		TakeoverAt: UTC(h.TakeoverAt), Detail: h.Reason}
	r.Message = h.Error()
	if h.State == admin.Fresh && h.Holder() == admin.BreakerID {
		// A break of a fresh lease (lease.Break): free once the broken
		// holder must have stopped.
		r.Message = fmt.Sprintf("lease %s was broken by an operator (bucketlease break) while its holder was live; that holder may still be writing until its fence, so the lease is free only at %s, when the break's Record goes stale",
			h.Key, UTC(h.TakeoverAt))
	}
	if waiting {
		r.Event = "waiting"
		r.Message = fmt.Sprintf("%s; waiting (takeover possible at %s, looking again every few seconds)", r.Message, UTC(h.TakeoverAt))
	}
	p.emit(h.Now, r)
}

// Note prints a line that is not a lease event (the command's start and
// end, for example).
func (p *Printer) Note(event, msg string, fill func(*Record)) {
	p.NoteAt(time.Now(), event, msg, fill)
}

// NoteAt is note for something that happened at t.
func (p *Printer) NoteAt(t time.Time, event, msg string, fill func(*Record)) {
	r := Record{Event: event, Message: msg}
	if fill != nil {
		fill(&r)
	}
	p.emit(t, r)
}

// Exit reports, as the last event, the code hold exits with and why: so a
// script reading --json can tell every outcome apart (a refusal, a lost
// lease, the command's own status) without the exit code.
func (p *Printer) Exit(err error) {
	code, show := exitcode.Of(err)
	msg := fmt.Sprintf("exit %d", code)
	if show {
		msg += ": " + err.Error()
	}
	p.Note("exit", msg, func(r *Record) {
		r.Status = &code
		if show {
			r.Error = err.Error()
		}
		if code == exitcode.Usage {
			r.Detail = "usage"
		}
	})
}
