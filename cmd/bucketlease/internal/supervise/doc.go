// Package supervise runs a command under a watchdog: a second process of
// the same binary (the hidden subcommand WatchdogName, run by RunWatchdog)
// that starts the command, kills it and everything it started at a
// deadline its parent keeps extending or when its parent disappears, and
// reports what happened over a pipe (ReadReports).
//
// On Linux the watchdog runs in a new PID namespace where the system
// allows one, else in a session of its own as a child subreaper, so that
// no process the command starts escapes it; elsewhere on Unix it signals
// the command's process group. StartWatchdog tries those ways in turn.
//
// The package knows nothing of leases: "bucketlease hold -- COMMAND"
// drives the watchdog with the lease's fence deadline, and
// "bucketlease put -- COMMAND" runs its producer as a Producer, whose
// stdout is the body it uploads.
package supervise
