// Package supervise runs a command under a watchdog: a second process of
// the same binary (WatchdogName, run by RunWatchdog) that starts the
// command, kills it and all it started at a deadline its parent keeps
// extending or when its parent disappears, and reports over a pipe
// (ReadReports). On Linux it runs in a new PID namespace where allowed,
// else as a child subreaper; elsewhere on Unix it signals the process group.
// It knows nothing of leases: hold and put drive it.
package supervise
