package drivertest

import (
	"context"
	"errors"
	"fmt"

	"github.com/mushroomdb/bucketlease/driver"
)

// The declaration and Get: obligations 1 and 2 in docs/drivers.md.

var getChecks = []check{
	check{
		name:   "capabilities-declared",
		expect: "the driver declares an exclusion (Capabilities().Exclusion is Conditional or BestEffort)",
		run: func(ctx context.Context, s *scope) error {
			c := s.b.Capabilities()
			if c.Exclusion != driver.NoExclusion {
				return nil
			}
			msg := "the driver declares no exclusion (Capabilities().Exclusion is NoExclusion, the zero value)"
			if c.Reason != "" {
				msg += ": " + c.Reason
			}
			return errors.New(msg + "; the lease refuses such a driver, so the lease checks are skipped. " +
				"Declare Exclusion: driver.Conditional if the service enforces IfAbsent and IfMatch atomically")
		},
	},
	check{
		name:   "get-missing",
		expect: "Get of a missing key returns ErrNotExist",
		run: func(ctx context.Context, s *scope) error {
			_, _, err := get(ctx, s.b, s.key("missing"))
			return want("Get", err, driver.ErrNotExist)
		},
	},
	check{
		name:   "get-version",
		expect: "Get never returns an empty version: it returns the version the last Put returned",
		run: func(ctx context.Context, s *scope) error {
			k := s.key("obj")
			v1, err := seed(ctx, s.b, k, []byte("one"))
			if err != nil {
				return err
			}
			for i, want := range []driver.Version{v1, ""} {
				if i == 1 {
					v2, err := overwrite(ctx, s.b, k, []byte("two"), v1)
					if err != nil {
						return err
					}
					want = v2
				}
				rc, v, err := get(ctx, s.b, k)
				if err != nil {
					return fmt.Errorf("Get: %s", outcome(err))
				}
				rc.Close()
				if v == "" {
					return errors.New("Get returned success with an empty version: a Get without a version is an error")
				}
				if v != want {
					return fmt.Errorf("Get returned version %q, but the last Put returned %q", v, want)
				}
			}
			return nil
		},
	},
}
