package simulation

import (
	"errors"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/lab/chaos/register"
)

// history records what the store did to the LEASE object, request by
// request, for a linearizability check against a compare-and-swap register
// (register.Check, with Porcupine). Times are a logical clock of the
// simulated network's events: a request is sent at one tick and answered at
// a later one. Requests that never reached the store are left out; one whose
// answer the fault model withholds or falsifies (a lost reply, a retry
// refused after the first attempt landed) is Unknown, as it would be to a
// client that knew the fault model.
type history struct {
	clock int64
	ops   []register.Op
}

func (h *history) sent(r *request) {
	h.clock++
	r.lcall = h.clock
}

// answered records r, whose answer err now reaches its client (or would,
// had it not given up).
func (h *history) answered(r *request, gaveUp bool) {
	if r.noApply {
		return
	}
	h.clock++
	op := register.Op{Kind: r.op, Call: r.lcall, Return: h.clock, Note: r.ident}
	if r.c.in != nil {
		op.Client = r.c.in.idx
	} else {
		op.Client = 1 << 10
	}
	if v, ok := r.eff.Match(); ok {
		op.Cond, op.Ver = register.Match, string(v)
	} else if r.eff == driver.IfAbsent() {
		op.Cond = register.Absent
	}
	if r.op == "put" {
		op.Body = sum(r.data)
	}
	switch {
	case gaveUp || r.f == fLostReply || r.f == fLostReplyRefused:
		op.Status = register.Unknown
	case r.err == nil:
		op.Status, op.OutVer = register.OK, string(r.v)
		if r.op == "get" {
			op.OutBody = sum(r.out)
		}
	case errors.Is(r.err, driver.ErrPrecondition):
		op.Status = register.Refused
	case errors.Is(r.err, driver.ErrNotExist):
		op.Status = register.NotFound
	default:
		op.Status = register.Unknown
	}
	h.ops = append(h.ops, op)
}

// unanswered records the requests that reached the store but whose answer
// never came before the run ended.
func (h *history) unanswered(rs []*request) {
	for _, r := range rs {
		if r.applied && !r.noApply && r.key == leaseKey {
			r.f = fLostReply
			h.answered(r, true)
		}
	}
}
