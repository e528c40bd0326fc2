// Package demo plays the lease's story for "bucketlease demo" (Run): two
// instances on an in-memory bucket, each with a fake clock, so that it
// takes no time and needs no service. One wins, the other is refused and
// told who holds the lease; the holder is cut off, fences itself, and the
// other takes over; the old holder learns that it lost.
//
// It exists so that the command's package holds commands and wiring, and
// the story, a small program of its own, is tested on its own.
package demo
