package drivertest

import (
	"context"
	"errors"
	"fmt"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/internal/objects"
)

// Versions: what IfMatch may name, and that the next one cannot be guessed (obligations 4 and 5).

var versionChecks = []check{
	check{
		name:   "version-a-b-a",
		area:   areaPut,
		expect: "writing body A, then B, then A again yields a version for B unlike A's and one for the second A unlike B's; IfMatch(B's version) is then refused, and IfMatch(the first A's version) is refused unless the service gave the second A the same version (a version may repeat only for identical bytes)",
		run:    versionABA,
	},
	check{
		name:   "version-unguessable",
		expect: "no version is FakeVersion of an earlier one (a version must not be predictable from an earlier one)",
		run:    versionUnguessable,
	},
	check{
		name:   "put-if-match-wildcard",
		area:   areaPut,
		expect: `IfMatch of a wildcard or a list ("*", "\"*\"", "v1,v2", W/v, empty) returns ErrPrecondition and changes nothing`,
		run: func(ctx context.Context, s *scope) error {
			k := s.key("obj")
			v, err := seed(ctx, s.b, k, []byte("one"))
			if err != nil {
				return err
			}
			for _, w := range []driver.Version{"*", `"*"`, v + "," + objects.FakeVersion(v), v + ", *",
				objects.FakeVersion(v) + "," + v, "W/" + v, ""} {
				_, err := put(ctx, s.b, k, []byte("overwritten by "+string(w)), driver.IfMatch(w))
				if err := want(fmt.Sprintf("Put IfMatch(%q)", w), err, driver.ErrPrecondition); err != nil {
					return err
				}
				if err := unchanged(ctx, s.b, k, []byte("one"), v); err != nil {
					return fmt.Errorf("after Put IfMatch(%q): %w", w, err)
				}
				err = s.b.Delete(ctx, k, driver.IfMatch(w))
				if !errors.Is(err, driver.ErrPrecondition) && !errors.Is(err, driver.ErrUnsupported) {
					return fmt.Errorf("Delete IfMatch(%q): %s, want ErrPrecondition (or ErrUnsupported)", w, outcome(err))
				}
				if err := unchanged(ctx, s.b, k, []byte("one"), v); err != nil {
					return fmt.Errorf("after Delete IfMatch(%q): %w", w, err)
				}
			}
			return nil
		},
	},
}

// versionUnguessable fails if a version is FakeVersion of an earlier one:
// the lease's probe relies on IfMatch of a made-up version being refused.
func versionUnguessable(ctx context.Context, s *scope) error {
	k := s.key("obj")
	v, err := seed(ctx, s.b, k, []byte("0"))
	if err != nil {
		return err
	}
	seen := []driver.Version{v}
	for i := 1; i < 5; i++ {
		nv, err := overwrite(ctx, s.b, k, []byte{byte('0' + i)}, v)
		if err != nil {
			return err
		}
		for _, old := range seen {
			if nv == old {
				return fmt.Errorf("the version %q came back for a later write: versions must be unique per key", nv)
			}
			if nv == objects.FakeVersion(old) {
				return fmt.Errorf("versions are guessable: after %q came %q, which is FakeVersion(%q). "+
					"Rule (docs/drivers.md, obligation 5, Versions): a version must not be predictable from an earlier one, "+
					"since the lease's probe expects IfMatch(FakeVersion(v)) to be refused; "+
					"a driver whose versions are counters must scramble them (as the mem driver does)", old, nv, old)
			}
		}
		seen = append(seen, nv)
		v = nv
	}
	return nil
}

// versionABA writes A, B, A: the version must change with the body, and may
// come back with the same bytes (S3's ETag; see obligation 5). Equal-length
// bodies catch versions derived from part of the body.
func versionABA(ctx context.Context, s *scope) error {
	k := s.key("obj")
	a, b := []byte("AAAA version-a-b-a"), []byte("BBBB version-a-b-a")
	va1, err := seed(ctx, s.b, k, a)
	if err != nil {
		return err
	}
	vb, err := overwrite(ctx, s.b, k, b, va1)
	if err != nil {
		return err
	}
	if vb == va1 {
		return fmt.Errorf("body A and body B (as long as A) got the same version %q: a version must change whenever the stored bytes do, "+
			"or IfMatch cannot tell the object changed (docs/drivers.md, obligation 5, Versions)", vb)
	}
	va2, err := overwrite(ctx, s.b, k, a, vb)
	if err != nil {
		return err
	}
	if va2 == vb {
		return fmt.Errorf("writing body A over body B kept B's version %q: a version must change whenever the stored bytes do (docs/drivers.md, obligation 5, Versions)", vb)
	}
	_, err = put(ctx, s.b, k, []byte("over A by B's version"), driver.IfMatch(vb))
	if err := want("Put IfMatch(B's version) after A, B, A", err, driver.ErrPrecondition); err != nil {
		return err
	}
	if err := unchanged(ctx, s.b, k, a, va2); err != nil {
		return err
	}
	if va1 == va2 {
		// Allowed: the version is the content's. The next write under
		// it succeeds, as under va2.
		return nil
	}
	_, err = put(ctx, s.b, k, []byte("over A by the first A's version"), driver.IfMatch(va1))
	if err := want(fmt.Sprintf("Put IfMatch(the first A's version %q) after A, B, A (the second A has %q)", va1, va2), err, driver.ErrPrecondition); err != nil {
		return err
	}
	return unchanged(ctx, s.b, k, a, va2)
}
