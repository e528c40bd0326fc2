package lease

import (
	"context"
	"log/slog"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// EventKind names a change in a lease's state.
type EventKind int

const (
	// EventAcquired: the lease was taken on a free key, or re-taken from a
	// record of our own (a restart, or a reply that was lost).
	EventAcquired EventKind = iota + 1
	// EventTookOver: the lease was taken over from a stale, released or suspect
	// record of another instance; Event.Previous names it. It is logged at
	// INFO over a released record (every run after the first), at WARN
	// otherwise.
	EventTookOver
	// EventRenewed: a renewal succeeded.
	EventRenewed
	// EventRenewalFailed: a renewal failed and will be retried until the fence
	// deadline; Event.Err says why.
	EventRenewalFailed
	// EventFenced: no renewal succeeded in two thirds of a TTL; writes stop.
	EventFenced
	// EventLost: the lease was found taken over or removed.
	EventLost
	// EventReleased: the lease was released: its record is marked released
	// (or was already gone, or someone else's).
	EventReleased
	// EventReleaseFailed: Release could not mark the record released; Err
	// says why. The record stays until it goes stale, a TTL after its last
	// renewal.
	EventReleaseFailed
)

// String returns the event's name.
func (k EventKind) String() string {
	switch k {
	case EventAcquired:
		return "acquired"
	case EventTookOver:
		return "took-over"
	case EventRenewed:
		return "renewed"
	case EventRenewalFailed:
		return "renewal-failed"
	case EventFenced:
		return "fenced"
	case EventLost:
		return "lost"
	case EventReleased:
		return "released"
	case EventReleaseFailed:
		return "release-failed"
	default:
		return "event"
	}
}

// Event reports a change in a lease's state to Options.OnEvent.
type Event struct {
	// Kind names the change.
	Kind EventKind
	// Key is the key of the lease object.
	Key string
	// InstanceID is the lease's instance id.
	InstanceID string
	// Epoch is the lease's epoch (Lease.Epoch); zero on events of a
	// lease that has none.
	Epoch uint64
	// Version is the version of the lease object the event is about.
	Version driver.Version
	// Time is when it happened, by the instance's wall clock.
	Time time.Time
	// Previous is the record taken over (TookOver) or the record that
	// replaced ours (Lost), when it could be read.
	Previous *admin.Record
	// Detail says more in words: why a record was taken over, for example.
	Detail string
	// Err is the cause of RenewalFailed, Fenced and Lost.
	Err error
	// exclusion is how strongly the lease keeps a second writer out, on
	// Acquired and TookOver, for the log.
	exclusion driver.Exclusion
}

// level is the log level of an event. Taking over a record its holder
// released is every run's ordinary acquire (INFO); taking over one whose
// holder stopped renewing, or a suspect one, is a WARN.
func (e Event) level() slog.Level {
	switch e.Kind {
	case EventRenewed:
		return slog.LevelDebug
	case EventTookOver:
		if e.Previous != nil && e.Previous.TTLSeconds == 0 {
			return slog.LevelInfo
		}
		return slog.LevelWarn
	case EventRenewalFailed:
		return slog.LevelWarn
	case EventFenced, EventLost, EventReleaseFailed:
		return slog.LevelError
	default:
		return slog.LevelInfo
	}
}

// emit logs e and hands it to the observer.
func (o *settings) emit(e Event) {
	attrs := []slog.Attr{
		slog.String("key", e.Key),
		slog.String("instance", e.InstanceID),
		slog.String("version", string(e.Version)),
	}
	if e.Kind == EventAcquired || e.Kind == EventTookOver {
		attrs = append(attrs, slog.String("exclusion", e.exclusion.String()))
	}
	if e.Previous != nil {
		attrs = append(attrs, slog.String("previous_instance", e.Previous.InstanceID))
	}
	if e.Detail != "" {
		attrs = append(attrs, slog.String("detail", e.Detail))
	}
	if e.Err != nil {
		attrs = append(attrs, slog.String("error", e.Err.Error()))
	}
	o.logger.LogAttrs(context.Background(), e.level(), "lease "+e.Kind.String(), attrs...)
	if o.onEvent != nil {
		o.onEvent(e)
	}
}
