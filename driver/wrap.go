package driver

import "io"

// Wrap returns a Bucket that runs outer's Get, Put, Delete and
// Capabilities and whose dynamic type implements exactly the optional
// interfaces Streamer, Lister and PendingLister that inner implements:
// each with outer's method where outer has one, and with inner's
// otherwise. A method of outer's for an interface inner lacks is left out,
// so that the result never claims an ability its bucket does not have; the
// package functions (PutStream, List) then fall back as they do for any
// driver without it. The result is always an io.Closer: its Close is
// outer's if outer has one, and otherwise closes inner (Close), which is
// what closing a Bucket without a Close method does anyway. Its Unwrap
// method returns inner.
//
// Every Bucket in this module that wraps another (the fenced bucket of
// Lease.Bucket, besteffort, the CLI's deadlines, drivertest's recorder) is
// built with Wrap, so that an optional interface added here reaches each of
// them at once instead of being dropped by whichever forwards by hand: see
// "Wrapping a Bucket" in docs/drivers.md.
func Wrap(outer, inner Bucket) Bucket {
	base := &wrapped{Bucket: outer, inner: inner, close: func() error { return Close(inner) }}
	if c, ok := outer.(io.Closer); ok {
		base.close = c.Close
	}
	return compose(base, pick[Streamer](outer, inner), pick[Lister](outer, inner), pick[PendingLister](outer, inner))
}

// Optional names the optional interfaces b implements, in the order
// "Streamer", "Lister", "PendingLister", "io.Closer". Tests of wrappers
// use it to say which ability was dropped.
func Optional(b Bucket) []string {
	var has []string
	for _, o := range []struct {
		name string
		ok   bool
	}{
		{"Streamer", is[Streamer](b)},
		{"Lister", is[Lister](b)},
		{"PendingLister", is[PendingLister](b)},
		{"io.Closer", is[io.Closer](b)},
	} {
		if o.ok {
			has = append(has, o.name)
		}
	}
	return has
}

// is reports whether b implements I.
func is[I any](b Bucket) bool {
	_, ok := b.(I)
	return ok
}

// pick returns outer as an I where both implement I, inner where only
// inner does, and nil where inner does not.
func pick[I any](outer, inner Bucket) I {
	var zero I
	in, ok := inner.(I)
	if !ok {
		return zero
	}
	if out, ok := outer.(I); ok {
		return out
	}
	return in
}

// wrapped is the four methods of the outer bucket, its Close, and the
// inner bucket.
type wrapped struct {
	Bucket
	inner Bucket
	close func() error
}

// Unwrap returns the bucket Wrap was given as inner.
func (w *wrapped) Unwrap() Bucket { return w.inner }

// Close runs the outer bucket's Close, or else closes the inner bucket.
func (w *wrapped) Close() error { return w.close() }

// compose returns b with the methods of each non-nil optional interface,
// one struct type per combination, as net/http ResponseWriter wrappers
// (httpsnoop) do: Go cannot add methods to a value at run time. A new
// optional interface doubles the table; TestWrapEveryCombination and
// TestOptionalNamesEveryOptionalInterface fail until it is complete.
func compose(b *wrapped, s Streamer, l Lister, p PendingLister) Bucket {
	type (
		// Short names, so that each combination stays small.
		W = *wrapped
		S = Streamer
		L = Lister
		P = PendingLister
	)
	switch {
	case s != nil && l != nil && p != nil:
		return struct {
			W
			S
			L
			P
		}{b, s, l, p}
	case s != nil && l != nil:
		return struct {
			W
			S
			L
		}{b, s, l}
	case s != nil && p != nil:
		return struct {
			W
			S
			P
		}{b, s, p}
	case l != nil && p != nil:
		return struct {
			W
			L
			P
		}{b, l, p}
	case s != nil:
		return struct {
			W
			S
		}{b, s}
	case l != nil:
		return struct {
			W
			L
		}{b, l}
	case p != nil:
		return struct {
			W
			P
		}{b, p}
	default:
		return b
	}
}
