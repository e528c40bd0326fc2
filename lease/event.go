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
	// EventAcquired: taken on a free key, or re-taken from our own record.
	EventAcquired EventKind = iota + 1
	// EventTookOver: taken over from another instance's stale, released or
	// suspect record (Event.Previous).
	EventTookOver
	// EventRenewed: a renewal succeeded.
	EventRenewed
	// EventRenewalFailed: a renewal failed and is retried until the fence
	// deadline.
	EventRenewalFailed
	// EventFenced: no renewal succeeded in two thirds of a TTL; writes stop.
	EventFenced
	// EventLost: the lease was found taken over or removed.
	EventLost
	// EventReleased: the record is marked released (or was gone, or another's).
	EventReleased
	// EventReleaseFailed: Release could not mark the record released; it
	// stays until it goes stale.
	EventReleaseFailed
)

// String returns the event's name.
func (k EventKind) String() string {
	names := [...]string{EventAcquired: "acquired", EventTookOver: "took-over", EventRenewed: "renewed", EventRenewalFailed: "renewal-failed",
		EventFenced: "fenced", EventLost: "lost", EventReleased: "released", EventReleaseFailed: "release-failed"}
	if k > 0 && int(k) < len(names) {
		return names[k]
	}
	return "event"
}

// Event reports a change in a lease's state to Options.OnEvent.
type Event struct {
	Kind EventKind // the change
	// Key is the key of the lease object.
	Key string
	// InstanceID is the lease's instance id.
	InstanceID string
	// Epoch is the lease's epoch; zero on a lease that has none.
	Epoch uint64
	// Version is the version of the lease object the event is about.
	Version driver.Version
	// Time is when it happened, by the instance's wall clock.
	Time time.Time
	// Previous is the record taken over (TookOver) or that replaced ours
	// (Lost), if readable.
	Previous *admin.Record
	// Detail says more in words.
	Detail string
	// Err is the cause of RenewalFailed, Fenced and Lost.
	Err error
	// exclusion is the lease's exclusion, logged on Acquired and TookOver.
	exclusion driver.Exclusion
}

// level is an event's log level: taking over a released record is every
// run's ordinary acquire (INFO), any other takeover a WARN.
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
