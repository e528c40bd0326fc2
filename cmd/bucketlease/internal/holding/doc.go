// Package holding is what bucketlease hold does with a lease once it has
// chosen one: take it, waiting for its holder if asked (Acquire); watch
// its object for a deletion or a replacement by something other than
// bucketlease (Watch); run a command under it through the watchdog of
// package supervise, stopping the command when the lease ends (Command);
// and release it, saying what the lease object shows afterwards
// (Release). put URL takes and releases its lease the same way.
//
// It exists so that the command's package holds flags and wiring, and the
// supervision of a lease, its timing and its wording live, and are tested,
// in one place. Everything it says goes through a report.Printer, and
// every outcome carries the exit code of package exitcode.
package holding
