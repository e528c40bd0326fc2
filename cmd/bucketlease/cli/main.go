// Package cli is the bucketlease command: it takes, inspects, tests and
// breaks the advisory single-writer lease ({prefix}/LEASE) on an
// object-store prefix, on every service a driver is registered for.
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
//
// The package exports one thing, [Main], so that a command with a driver of
// another module is a main package of a few lines (docs/drivers.md,
// "Putting your driver in the command"). Importing the package registers
// every driver of this module (the file driver on Unix only), so such a
// command has every built-in scheme as well as its own.
package cli

import (
	"context"
	"os"

	_ "github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/drivers" // every scheme of this module
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/supervise"
)

// Main runs the bucketlease command line args, which are the process's
// arguments as in os.Args (args[0] is the program's name), with os.Stdin,
// os.Stdout and os.Stderr and the process's environment, and returns the
// exit code. Every driver registered when it is called serves its scheme:
// this module's own, which importing this package registers, and those of
// the packages the calling program imports.
//
// A bucketlease command with a driver of its own is this main package:
//
//	package main
//
//	import (
//		"os"
//
//		"github.com/mushroomdb/bucketlease/cmd/bucketlease/cli"
//		_ "example.com/yourdriver" // registers its scheme
//	)
//
//	func main() { os.Exit(cli.Main(os.Args)) }
//
// Main must be given the process's own arguments and be what its main
// calls first: hold and put run the program's executable again as their
// watchdog (args[1] is then the hidden subcommand __watchdog), and that
// process must reach Main with the same drivers registered.
func Main(args []string) int {
	if len(args) > 1 && args[1] == supervise.WatchdogName {
		return supervise.RunWatchdog(args[2:])
	}
	if len(args) > 0 {
		args = args[1:]
	}
	e := &env{stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}
	return run(context.Background(), e, args)
}
