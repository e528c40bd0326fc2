package lease_test

// Tests that kill mutants of the safety lines which the other tests let
// survive (scripts/mutate, internal/mutate/mutants.txt).

import (
	"context"
	"errors"
	"testing"

	"github.com/mushroomdb/bucketlease/clock"
	"github.com/mushroomdb/bucketlease/driver/mem"
	"github.com/mushroomdb/bucketlease/lease"
)

// TestHolderReplacedByATwinLearnsInstanceInUse: a live holder whose record
// is replaced by another process configured with the same instance id
// learns so at its next renewal: ErrLost wrapping ErrInstanceInUse, which
// tells the operator to give each process its own id. A holder taken over
// by another id gets ErrLost without ErrInstanceInUse. (Mutant
// lose-no-instance-in-use.)
func TestHolderReplacedByATwinLearnsInstanceInUse(t *testing.T) {
	for _, tc := range []struct {
		name, by string
		inUse    bool
	}{
		{"a twin with our id", "same", true},
		{"another instance", "other", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := mem.New()
			c := clock.NewFake(t0)
			holder := acquire(t, b, "same", c)
			c.Advance(ttl / 3)
			// The other process's record, written over ours while we are
			// live (its clock says ours was stale, or it ignored the lease).
			put(t, b, foreign(tc.by, c.Wall(), 30))
			err := holder.Renew(context.Background())
			if !errors.Is(err, lease.ErrLost) {
				t.Fatalf("renewal after the record was replaced: %v, want ErrLost", err)
			}
			if got := errors.Is(err, lease.ErrInstanceInUse); got != tc.inUse {
				t.Fatalf("renewal's error %q: errors.Is(err, ErrInstanceInUse) = %v, want %v", err, got, tc.inUse)
			}
			if got := errors.Is(holder.Err(), lease.ErrInstanceInUse); got != tc.inUse {
				t.Fatalf("Err() = %v: errors.Is(err, ErrInstanceInUse) = %v, want %v", holder.Err(), got, tc.inUse)
			}
			if holder.MayWrite() {
				t.Fatal("the replaced holder may still write")
			}
		})
	}
}
