package exitcode

import (
	"errors"
	"flag"
	"fmt"
	"testing"
)

func TestOf(t *testing.T) {
	for _, c := range []struct {
		err  error
		code int
		show bool
	}{
		{nil, OK, false},
		{flag.ErrHelp, OK, false},
		{errors.New("x"), Failure, true},
		{fmt.Errorf("wrapped: %w", With(Held, errors.New("held"))), Held, true},
		{With(7, nil), 7, false},
		{Usagef("bad %s", "flag"), Usage, true},
	} {
		if code, show := Of(c.err); code != c.code || show != c.show {
			t.Errorf("Of(%v) = %d, %v; want %d, %v", c.err, code, show, c.code, c.show)
		}
	}
}
