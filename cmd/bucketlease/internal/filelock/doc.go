// Package filelock names, and for break ends, the processes that hold the
// file driver's lock on a key (file.Bucket.LockHolders): one writing it
// now, or one stopped (SIGSTOP, Ctrl-Z, a debugger) while it did, which
// keeps every other writer out until it is resumed or ended.
//
// It exists so that show and break say who blocks a file:// lease, and
// break --kill-stopped-lock-holder ends a stopped holder through a pidfd,
// without the command knowing the driver's lock files.
package filelock
