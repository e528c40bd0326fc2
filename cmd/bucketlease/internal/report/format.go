package report

import (
	"time"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/term"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// HolderName renders a holder's instance id, saying who break is.
func HolderName(id string) string {
	if id == admin.BreakerID {
		return id + " (broken by an operator with bucketlease break)"
	}
	return term.Safe(id)
}

// UTC renders t for people and scripts alike: RFC 3339 in UTC, with its Z.
func UTC(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// Ago renders how long before now t was, for people: "4s ago", "in 3s".
func Ago(now, t time.Time) string {
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

// YesNo renders a bool as "yes" or "no".
func YesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
