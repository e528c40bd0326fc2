// Package admin is the lease object as its readers and operators see it:
// its record ([Record]), what a reader makes of it ([Inspect], [Status]),
// the stamp of every object written under a lease ([Stamp]), the objects a
// holder wrote after its lease had passed on ([LateWrites],
// [Status.LateRead]), and the removal of pending uploads no live holder may
// still commit ([RemovePending]). Package lease builds on its reading and
// judging ([Read], [Judge]).
package admin
