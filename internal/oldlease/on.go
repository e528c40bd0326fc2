//go:build bucketlease_oldlease

package oldlease

import "sync/atomic"

// Switch is an old behaviour that a negative control turns on.
type Switch struct{ atomic.Bool }

// Enabled reports whether this build can turn switches on.
const Enabled = true

// With runs f with s turned on, and reports true.
func With(s *Switch, f func()) bool {
	s.Store(true)
	defer s.Store(false)
	f()
	return true
}
