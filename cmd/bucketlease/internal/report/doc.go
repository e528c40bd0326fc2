// Package report writes what the bucketlease command says about a lease:
// show's status, for people (PrintStatus) and as JSON (StatusJSON), list's
// leases (PrintList), probe's checks (PrintProbe, ProbeJSON), the uploads
// pending under a prefix (ListPending), and the times, durations and
// holder names every command prints alike.
//
// It exists so that the commands share one wording of a lease's state,
// and so that what the service hands back reaches the terminal only
// through term.Safe.
package report
