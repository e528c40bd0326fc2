package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/term"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/lease"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

const envConditional = lease.EnvConditional

// printer writes what happens to a lease, one line per change: text for
// people, or JSON lines for scripts (--json). It is safe for concurrent
// use: the lease reports from its own goroutines.
type printer struct {
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

// printerQueue is how many lines may wait for a slow output.
const printerQueue = 1024

// start makes emit hand lines to a goroutine.
func (p *printer) start() {
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

// close writes out what is queued, waiting at most d for a slow output,
// and makes emit write directly again.
func (p *printer) close(d time.Duration) {
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

// record is one JSON line. Empty fields are left out.
type record struct {
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
func (p *printer) emit(t time.Time, r record) {
	r.Time = t.UTC().Format(time.RFC3339)
	var line []byte
	if p.json {
		b, _ := json.Marshal(r) // a record always marshals
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

// event prints a lease event. Renewals are printed only when verbose.
// The lease's own released and release-failed events are not printed:
// hold reports the release itself, once it has read the lease object back
// (the lease's released event also covers a record that was already
// someone else's), or the failure with its cause and exit 125.
func (p *printer) event(ev lease.Event) {
	switch {
	case ev.Kind == lease.EventRenewed && !p.verbose,
		ev.Kind == lease.EventReleased, ev.Kind == lease.EventReleaseFailed:
		return
	}
	r := record{Event: ev.Kind.String(), Key: ev.Key, Instance: ev.InstanceID, Version: string(ev.Version), Detail: ev.Detail}
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

// held prints who holds the lease while hold waits for it.
func (p *printer) held(h *lease.HeldError, waiting bool) {
	r := record{Event: "held", Key: h.Key, Holder: h.Holder(), State: h.State.String(), Version: string(h.Version),
		TakeoverAt: utc(h.TakeoverAt), Detail: h.Reason}
	r.Message = h.Error()
	if h.State == admin.Fresh && h.Holder() == admin.BreakerID {
		// A break of a fresh lease (lease.Break): free once the broken
		// holder must have stopped.
		r.Message = fmt.Sprintf("lease %s was broken by an operator (bucketlease break) while its holder was live; that holder may still be writing until its fence, so the lease is free only at %s, when the break's record goes stale",
			h.Key, utc(h.TakeoverAt))
	}
	if waiting {
		r.Event = "waiting"
		r.Message = fmt.Sprintf("%s; waiting (takeover possible at %s, looking again every few seconds)", r.Message, utc(h.TakeoverAt))
	}
	p.emit(h.Now, r)
}

// note prints a line that is not a lease event (the command's start and
// end, for example).
func (p *printer) note(event, msg string, fill func(*record)) {
	p.noteAt(time.Now(), event, msg, fill)
}

// noteAt is note for something that happened at t.
func (p *printer) noteAt(t time.Time, event, msg string, fill func(*record)) {
	r := record{Event: event, Message: msg}
	if fill != nil {
		fill(&r)
	}
	p.emit(t, r)
}

// newLogger returns the logger for --log-level, on stderr, as JSON with
// --json; "off" (the default) discards it. Hold's events come from
// lease.Options.OnEvent, never from the log: the log is for debugging.
func newLogger(w io.Writer, level string, asJSON bool) (*slog.Logger, error) {
	if level == "off" {
		return slog.New(slog.DiscardHandler), nil
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, usageErrorf("--log-level %q: use off, debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	if asJSON {
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return slog.New(slog.NewTextHandler(w, opts)), nil
}

// holderName renders a holder's instance id, saying who break is.
func holderName(id string) string {
	if id == admin.BreakerID {
		return id + " (broken by an operator with bucketlease break)"
	}
	return term.Safe(id)
}

// utc renders t for people and scripts alike: RFC 3339 in UTC, with its Z.
func utc(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// ago renders how long before now t was, for people: "4s ago", "in 3s".
func ago(now, t time.Time) string {
	d := now.Sub(t).Round(time.Second)
	switch {
	case d > 0:
		return d.String() + " ago"
	case d < 0:
		return "in " + (-d).String() + " (stamped in the future)"
	default:
		return "just now"
	}
}

// yesNo renders a bool as "yes" or "no".
func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// exit reports, as the last event, the code hold exits with and why: so a
// script reading --json can tell every outcome apart (a refusal, a lost
// lease, the command's own status) without the exit code.
func (p *printer) exit(err error) {
	code, show := codeOf(err)
	msg := fmt.Sprintf("exit %d", code)
	if show {
		msg += ": " + err.Error()
	}
	p.note("exit", msg, func(r *record) {
		r.Status = &code
		if show {
			r.Error = err.Error()
		}
		if code == exitUsage {
			r.Detail = "usage"
		}
	})
}

// errorJSON is what show, break and probe print with --json when they
// fail or refuse: one object on stdout, so that a script reading it can
// tell every outcome apart without the exit code or stderr (which still
// has the message, for people).
type errorJSON struct {
	Command string `json:"command"`
	Exit    int    `json:"exit"`
	Class   string `json:"class"`
	Message string `json:"message"`
}

// classedErr is an error with the class --json reports for it, for a
// refusal whose cause no sentinel names.
type classedErr struct {
	class string
	err   error
}

func (e *classedErr) Error() string { return e.err.Error() }
func (e *classedErr) Unwrap() error { return e.err }

// withClass marks err with its class for --json.
func withClass(class string, err error) error { return &classedErr{class: class, err: err} }

// errorClass is the class of err: usage, held, precondition, permission,
// not-found, invalid-key, timeout, probe-failed, or error for anything
// else (the network, the service, a URL the driver refused).
func errorClass(err error) string {
	var ce *classedErr
	code, _ := codeOf(err)
	switch {
	case errors.As(err, &ce):
		return ce.class
	case code == exitUsage:
		return "usage"
	case code == exitProbeFailed:
		return "probe-failed"
	case errors.Is(err, driver.ErrPrecondition):
		return "precondition"
	case errors.Is(err, driver.ErrPermission):
		return "permission"
	case errors.Is(err, driver.ErrBucketNotExist), errors.Is(err, driver.ErrNotExist), errors.Is(err, fs.ErrNotExist):
		return "not-found"
	case errors.Is(err, driver.ErrInvalidKey):
		return "invalid-key"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	default:
		return "error"
	}
}

// jsonFailure writes err as show's, break's, probe's or list's --json error object
// on w, and returns err for the exit code and stderr. A nil err, or help,
// writes nothing.
func jsonFailure(w io.Writer, command string, err error) error {
	code, show := codeOf(err)
	if err == nil || !show {
		return err
	}
	_ = writeJSON(w, errorJSON{Command: command, Exit: code, Class: errorClass(err), Message: err.Error()})
	return err
}

// The commands whose --json covers their failures and refusals too (hold
// reports its own, as its exit event).
func init() {
	for _, c := range []*command{showCommand, breakCommand, probeCommand, listCommand, pruneCommand} {
		setup := c.setup
		c.setup = func(fs *flag.FlagSet) runFunc {
			run := setup(fs)
			return func(ctx context.Context, e *env, args []string) error {
				out := &countingWriter{w: e.stdout}
				ce := *e
				ce.stdout = out
				err := run(ctx, &ce, args)
				// A command that printed its own object (probe's report
				// of checks that failed) is not given a second one.
				// A usage error may have stopped the flag package before
				// it got to --json: look at the command line itself.
				code, _ := codeOf(err)
				if f := fs.Lookup("json"); f != nil && (f.Value.String() == "true" || code == exitUsage && wantsJSON(args)) && out.n == 0 {
					return jsonFailure(e.stdout, fs.Name(), err)
				}
				return err
			}
		}
	}
}

// waitSeconds is hold's -w SECS, as flock's: wait at most SECS seconds (a
// number, fractions allowed, no unit) for the lease; it sets --wait and
// --wait-timeout.
type waitSeconds struct {
	wait    *bool
	timeout *time.Duration
}

func (w waitSeconds) String() string {
	if w.timeout == nil || *w.timeout == 0 {
		return ""
	}
	return strconv.FormatFloat(w.timeout.Seconds(), 'f', -1, 64)
}

func (w waitSeconds) Set(s string) error {
	secs, err := strconv.ParseFloat(s, 64)
	if err != nil || secs <= 0 || secs > 1e9 || secs != secs {
		return fmt.Errorf("%q: -w takes a number of seconds greater than 0, as flock -w (for a duration with a unit, use --wait --wait-timeout)", s)
	}
	*w.wait, *w.timeout = true, time.Duration(secs*float64(time.Second))
	return nil
}

// countingWriter counts what is written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
