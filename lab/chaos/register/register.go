// Package register checks a history of operations on one object of a
// conditional store (the LEASE object) for linearizability against a
// compare-and-swap register, with Porcupine
// (github.com/anishathalye/porcupine), a checker nobody on this project
// wrote.
//
// The register holds nothing (the object does not exist) or a body with a
// version. A read returns both, or "not found"; a PUT with If-None-Match: *
// succeeds only on nothing, one with If-Match: v only on version v, an
// unconditional one always; a DELETE likewise. An operation whose outcome
// the client could not know (a timeout, a reset connection, a process
// killed while it waited) may have taken effect or not, at any time after
// it was sent; a write whose outcome is unknown leaves a body whose version
// nobody has seen yet, and the next read that sees it tells.
package register

import (
	"fmt"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// Kinds of operation.
const (
	Get    = "get"
	Put    = "put"
	Delete = "delete"
)

// Conditions.
const (
	None   = ""
	Absent = "absent"
	Match  = "match"
)

// Statuses of an answer.
const (
	OK       = "ok"
	Refused  = "refused"   // the precondition did not hold
	NotFound = "not-found" // a read (or delete) of nothing
	Unknown  = "unknown"   // the outcome is not known
)

// Op is one operation: what was asked, and what the client was told.
type Op struct {
	Client int    // who sent it (for the report)
	Kind   string // Get, Put or Delete
	Cond   string // None, Absent or Match
	Ver    string // the version If-Match named
	Body   string // what a Put wrote (a digest will do)
	Call   int64  // when it was sent
	Return int64  // when its answer came; ignored for Unknown

	Status  string // OK, Refused, NotFound or Unknown
	OutVer  string // the version a successful Put or Get returned
	OutBody string // the body a Get returned
	Note    string // for the report
}

type input struct {
	kind, cond, ver, body string
}

type output struct {
	status, ver, body string
}

// state is the register: exists, and if so its body and its version ("" if
// a write whose answer was lost made it and nobody has read it since).
type state struct {
	exists    bool
	ver, body string
}

// Normalize makes versions from different drivers comparable: quotes and
// a weak-ETag prefix are dropped.
func Normalize(v string) string {
	v = strings.TrimPrefix(v, "W/")
	return strings.Trim(v, `"`)
}

var model = porcupine.NondeterministicModel{
	Init: func() []interface{} { return []interface{}{state{}} },
	Step: func(st, in, out interface{}) []interface{} {
		s, i, o := st.(state), in.(input), out.(output)
		// may and mayNot: whether i's condition may hold in s, and may not.
		may, mayNot := true, false
		switch i.cond {
		case Absent:
			may, mayNot = !s.exists, s.exists
		case Match:
			may = s.exists && (s.ver == "" || s.ver == i.ver)
			mayNot = !s.exists || s.ver != i.ver
		}
		switch i.kind {
		case Get:
			switch o.status {
			case NotFound:
				if !s.exists {
					return []interface{}{s}
				}
			case OK:
				if s.exists && s.body == o.body && (s.ver == "" || s.ver == o.ver) {
					return []interface{}{state{true, o.ver, s.body}}
				}
			case Unknown:
				return []interface{}{s}
			}
			return nil
		case Put:
			applied := state{true, o.ver, i.body}
			switch o.status {
			case OK:
				if may {
					return []interface{}{applied}
				}
			case Refused:
				if mayNot {
					return []interface{}{s}
				}
			case Unknown:
				next := []interface{}{s}
				if may {
					next = append(next, state{true, "", i.body})
				}
				return next
			}
			return nil
		default: // Delete
			switch o.status {
			case OK, NotFound:
				// Deleting nothing is a success on some services.
				if may || !s.exists {
					return []interface{}{state{}}
				}
			case Refused:
				if mayNot {
					return []interface{}{s}
				}
			case Unknown:
				next := []interface{}{s}
				if may {
					next = append(next, state{})
				}
				return next
			}
			return nil
		}
	},
	Equal: func(a, b interface{}) bool { return a.(state) == b.(state) },
	DescribeOperation: func(in, out interface{}) string {
		i, o := in.(input), out.(output)
		return fmt.Sprintf("%s %s%s %s -> %s %s", i.kind, i.cond, i.ver, i.body, o.status, o.ver)
	},
	DescribeState: func(st interface{}) string {
		s := st.(state)
		if !s.exists {
			return "nothing"
		}
		return fmt.Sprintf("%s@%s", s.body, s.ver)
	},
}

// Result is a check's verdict.
type Result struct {
	// Linearizable is true when the history is linearizable; false when it
	// is not, or the check did not finish (TimedOut).
	Linearizable bool
	TimedOut     bool
	Ops          int
	// Info, when not linearizable, is Porcupine's partial linearization,
	// for its visualization (porcupine.Visualize).
	Info porcupine.LinearizationInfo
	// Longest is the number of operations in the longest partial
	// linearization Porcupine found (all of them when linearizable).
	Longest int
}

// Check checks ops, within timeout (0: no limit). Operations with an
// Unknown outcome may take effect at any time after their Call.
func Check(ops []Op, timeout time.Duration) Result {
	var end int64
	for _, op := range ops {
		end = max(end, op.Call, op.Return)
	}
	hist := make([]porcupine.Operation, 0, len(ops))
	for _, op := range ops {
		if op.Kind == Get && op.Status == Unknown {
			continue // a read that told nothing did nothing
		}
		ret := op.Return
		if op.Status == Unknown || ret <= op.Call {
			ret = max(ret, op.Call+1)
		}
		if op.Status == Unknown {
			ret = end + 1 + int64(len(hist)) // it may land at any time after it was sent
		}
		hist = append(hist, porcupine.Operation{ClientId: op.Client,
			Input:  input{op.Kind, op.Cond, Normalize(op.Ver), op.Body},
			Call:   op.Call,
			Output: output{op.Status, Normalize(op.OutVer), op.OutBody},
			Return: ret})
	}
	res, info := porcupine.CheckOperationsVerbose(model.ToModel(), hist, timeout)
	longest := 0
	for _, part := range info.PartialLinearizations() {
		for _, l := range part {
			longest = max(longest, len(l))
		}
	}
	return Result{Linearizable: res == porcupine.Ok, TimedOut: res == porcupine.Unknown, Ops: len(hist), Info: info, Longest: longest}
}
