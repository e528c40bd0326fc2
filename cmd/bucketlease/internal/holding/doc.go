// Package holding is what bucketlease hold and put do with a lease: take
// it, waiting if asked (Acquire); watch its object for deletion or
// replacement (Watch); run a command under it through package supervise's
// watchdog (Command); and release it (Release). It speaks through a
// report.Printer, and every outcome carries an exitcode.
package holding
