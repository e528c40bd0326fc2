//go:build !bucketlease_oldlease

package oldlease

// Switch is an old behaviour, off for good in this build: Load is a
// constant false, so the code it guards is compiled out.
type Switch struct{}

// Load reports false.
func (Switch) Load() bool { return false }

// Enabled reports whether this build can turn switches on.
const Enabled = false

// With does nothing and reports false: this build cannot turn s on.
func With(s *Switch, f func()) bool { return false }
