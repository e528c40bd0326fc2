package drivertest

import (
	"context"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/internal/objects"
)

// Delete, and its condition where declared: obligation 7.

var deleteChecks = []check{
	check{
		name:   "delete-missing",
		expect: "an unconditional Delete of a missing key succeeds",
		run: func(ctx context.Context, s *scope) error {
			return want("Delete of a missing key", s.b.Delete(ctx, s.key("missing"), driver.Condition{}), nil)
		},
	},
	check{
		name:   "delete-unconditional",
		expect: "an unconditional Delete removes the object",
		run: func(ctx context.Context, s *scope) error {
			k := s.key("obj")
			if _, err := seed(ctx, s.b, k, []byte("x")); err != nil {
				return err
			}
			if err := want("Delete", s.b.Delete(ctx, k, driver.Condition{}), nil); err != nil {
				return err
			}
			return absent(ctx, s.b, k)
		},
	},
	check{
		name:    "delete-if-match-wrong",
		area:    areaDelete,
		applies: condDelete,
		expect:  "Delete IfMatch with a stale or made-up version returns ErrPrecondition; object unchanged",
		run: func(ctx context.Context, s *scope) error {
			k := s.key("obj")
			v1, v2, err := seedOverwritten(ctx, s.b, k)
			if err != nil {
				return err
			}
			if err := want("Delete IfMatch(stale)", s.b.Delete(ctx, k, driver.IfMatch(v1)), driver.ErrPrecondition); err != nil {
				return err
			}
			if err := want("Delete IfMatch(made-up)", s.b.Delete(ctx, k, driver.IfMatch(objects.FakeVersion(v2))), driver.ErrPrecondition); err != nil {
				return err
			}
			return unchanged(ctx, s.b, k, []byte("two"), v2)
		},
	},
	check{
		name:    "delete-if-match-missing",
		area:    areaDelete,
		applies: condDelete,
		expect:  "Delete IfMatch on a missing key returns ErrPrecondition",
		run: func(ctx context.Context, s *scope) error {
			v, err := seed(ctx, s.b, s.key("other"), []byte("x"))
			if err != nil {
				return err
			}
			return want("Delete IfMatch on a missing key", s.b.Delete(ctx, s.key("missing"), driver.IfMatch(v)), driver.ErrPrecondition)
		},
	},
	check{
		name:    "delete-if-match-current",
		area:    areaDelete,
		applies: condDelete,
		expect:  "Delete IfMatch with the current version removes the object",
		run: func(ctx context.Context, s *scope) error {
			k := s.key("obj")
			v, err := seed(ctx, s.b, k, []byte("x"))
			if err != nil {
				return err
			}
			if err := want("Delete IfMatch(current)", s.b.Delete(ctx, k, driver.IfMatch(v)), nil); err != nil {
				return err
			}
			return absent(ctx, s.b, k)
		},
	},
	check{
		name:    "delete-condition-refused",
		applies: noCondDelete,
		expect:  "without a conditional Delete, Delete IfMatch returns ErrUnsupported and removes nothing",
		run: func(ctx context.Context, s *scope) error {
			k := s.key("obj")
			v, err := seed(ctx, s.b, k, []byte("x"))
			if err != nil {
				return err
			}
			if err := want("Delete IfMatch", s.b.Delete(ctx, k, driver.IfMatch(v)), driver.ErrUnsupported); err != nil {
				return err
			}
			return unchanged(ctx, s.b, k, []byte("x"), v)
		},
	},
}
