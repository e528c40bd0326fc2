// Command bucketlease takes, inspects, tests and breaks the advisory
// single-writer lease ({prefix}/LEASE) on an object-store prefix, on every
// service this module has a driver for.
//
//	bucketlease demo                       the lease's story, in memory
//	bucketlease hold URL [-- COMMAND...]   hold the lease (while COMMAND runs)
//	bucketlease show URL                   who holds the lease, and since when
//	bucketlease probe URL                  does the service give the exclusion?
//	bucketlease break URL --version V      free a stuck lease, if unchanged
//	bucketlease prune URL --older-than D   remove a dead writer's pending uploads
//	bucketlease version                    the module version and VCS revision
//
// hold runs its command under a watchdog, a second process of this binary
// (the hidden subcommand __watchdog), that kills the command and everything
// it started at the lease's fence deadline unless hold extends it, and at
// once if hold dies.
//
// Run "bucketlease help" for the URL schemes, the credentials each driver
// reads and the exit codes, and "bucketlease help COMMAND" for a command's
// flags and examples.
package main

import (
	"context"
	"os"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == watchdogName {
		os.Exit(runWatchdog(os.Args[2:]))
	}
	e := &env{stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}
	os.Exit(run(context.Background(), e, os.Args[1:]))
}
