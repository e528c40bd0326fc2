//go:build !unix

package supervise

import "os"

// WatchdogName is the hidden subcommand that runs the watchdog, which
// this system does not have.
const WatchdogName = "__watchdog"

// SignalName names a signal.
func SignalName(s os.Signal) string { return s.String() }

// RunWatchdog exits 2: there is no watchdog for this system.
func RunWatchdog([]string) int { return 2 }
