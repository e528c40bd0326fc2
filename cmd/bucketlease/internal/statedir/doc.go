// Package statedir chooses the directory where hold keeps a lease's state
// between runs (For): its lock, and the notes that let a restart with the
// same instance id take back its own lease at once.
//
// It exists so that every spelling of one prefix finds the same directory
// and two prefixes never share one, and so that a directory an earlier
// version named is carried over rather than lost.
package statedir
