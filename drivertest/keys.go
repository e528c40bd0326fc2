package drivertest

import (
	"context"
	"errors"
	"fmt"

	"github.com/mushroomdb/bucketlease/driver"
)

// Keys: a key that is a prefix of another (obligation 10).

var keyChecks = []check{
	check{
		name: "key-prefix-of-key",
		expect: "a key that is a prefix of another (k and k/x) is stored and read on its own, or refused with ErrInvalidKey; " +
			"a Get of it when missing is ErrNotExist; once the longer key is deleted it can be written",
		run: keyPrefix,
	},
}

func keyPrefix(ctx context.Context, s *scope) error {
	// The longer key first, then the shorter one.
	short := s.key("a")
	long := s.key("a/b")
	if _, err := seed(ctx, s.b, long, []byte("long")); err != nil {
		return err
	}
	if _, _, err := get(ctx, s.b, short); !errors.Is(err, driver.ErrNotExist) {
		return fmt.Errorf("Get of %q while %q exists: %s, want ErrNotExist", short, long, outcome(err))
	}
	if err := s.b.Delete(ctx, short, driver.Condition{}); err != nil {
		return fmt.Errorf("Delete of the missing %q while %q exists: %s, want success", short, long, outcome(err))
	}
	stored, err := putPrefixed(ctx, s.b, short, long)
	if err != nil {
		return err
	}
	if err := holdsData(ctx, s.b, long, "long"); err != nil {
		return err
	}
	if stored {
		if err := holdsData(ctx, s.b, short, "short"); err != nil {
			return err
		}
		if err := s.b.Delete(ctx, short, driver.Condition{}); err != nil {
			return fmt.Errorf("Delete %q: %s", short, outcome(err))
		}
	}
	if err := s.b.Delete(ctx, long, driver.Condition{}); err != nil {
		return fmt.Errorf("Delete %q: %s", long, outcome(err))
	}
	if _, err := put(ctx, s.b, short, []byte("short"), driver.IfAbsent()); err != nil {
		return fmt.Errorf("Put IfAbsent %q once %q is deleted: %s, want success", short, long, outcome(err))
	}
	// The shorter key first, then the longer one.
	long2 := short + "/c"
	s.key("a/c")
	stored, err = putPrefixed(ctx, s.b, long2, short)
	if err != nil {
		return err
	}
	if err := holdsData(ctx, s.b, short, "short"); err != nil {
		return err
	}
	if stored {
		return holdsData(ctx, s.b, long2, "short")
	}
	if _, _, err := get(ctx, s.b, long2); !errors.Is(err, driver.ErrNotExist) {
		return fmt.Errorf("Get of the refused %q: %s, want ErrNotExist", long2, outcome(err))
	}
	if err := s.b.Delete(ctx, short, driver.Condition{}); err != nil {
		return fmt.Errorf("Delete %q: %s", short, outcome(err))
	}
	if _, err := put(ctx, s.b, long2, []byte("long"), driver.IfAbsent()); err != nil {
		return fmt.Errorf("Put IfAbsent %q once %q is deleted: %s, want success", long2, short, outcome(err))
	}
	return nil
}

// putPrefixed writes "short" to key while other exists, and reports whether
// it was stored; a refusal must be ErrInvalidKey.
func putPrefixed(ctx context.Context, b driver.Bucket, key, other string) (bool, error) {
	_, err := put(ctx, b, key, []byte("short"), driver.IfAbsent())
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, driver.ErrInvalidKey):
		return false, nil
	}
	return false, fmt.Errorf("Put IfAbsent %q while %q exists: %s, want success or ErrInvalidKey", key, other, outcome(err))
}

func holdsData(ctx context.Context, b driver.Bucket, key, want string) error {
	got, _, err := read(ctx, b, key)
	if err != nil {
		return fmt.Errorf("Get %q: %s", key, outcome(err))
	}
	if string(got) != want {
		return fmt.Errorf("%q holds %q, want %q", key, clip(got), want)
	}
	return nil
}
