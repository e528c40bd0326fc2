// Package admin is the lease object as its readers and operators see it:
// the record {prefix}/LEASE holds ([Record], [DecodeRecord]), what a reader
// makes of it at a moment ([Inspect], [Status], [State]), the stamp every
// object written under a lease carries ([Stamp], [StampOf]), and the
// objects a holder wrote after its lease had passed on ([LateWrites], and
// [Status.LateRead] for the very version a reader read). [RemovePending]
// aborts the uploads that dead or fenced writers left under a prefix, and
// never one that a live holder may still commit.
//
// Package lease builds on it: [Read], [Judge] and [ServiceClock] are the
// reading and the judging that a contender and [Inspect] share.
package admin
