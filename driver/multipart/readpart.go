package multipart

import (
	"context"
	"fmt"
	"io"
)

// ReadPart fills buf from r and reports the bytes read. The error is nil
// when buf was filled, io.EOF when r itself returned io.EOF (the last
// part), and r's error otherwise, io.ErrUnexpectedEOF included: only r's
// own io.EOF ends a body, since a cut body is not whole. A reader that
// makes no progress maxEmptyReads times fails with io.ErrNoProgress; ctx
// is looked at before every Read.
func ReadPart(ctx context.Context, r io.Reader, buf []byte) (int, error) {
	n, empty := 0, 0
	for n < len(buf) {
		if err := ctx.Err(); err != nil {
			return n, context.Cause(ctx)
		}
		m, err := r.Read(buf[n:])
		if m < 0 || m > len(buf)-n {
			return n, fmt.Errorf("the body's reader returned an impossible count (%d bytes read into %d)", m, len(buf)-n)
		}
		n += m
		switch {
		case err == io.EOF:
			return n, io.EOF
		case err != nil:
			return n, err
		case m == 0:
			if empty++; empty >= maxEmptyReads {
				return n, io.ErrNoProgress
			}
		default:
			empty = 0
		}
	}
	return n, nil
}

// maxEmptyReads is how many reads in a row that return nothing and no
// error ReadPart waits through (as bufio does).
const maxEmptyReads = 100

// partSource cuts a reader into parts, looking one byte ahead so that a
// part that ends exactly at the end of the body is known to be the last.
type partSource struct {
	r     io.Reader
	carry []byte
	one   [1]byte
}

// next fills buf and reports how many bytes it holds and whether it is the
// body's last part.
func (s *partSource) next(ctx context.Context, buf []byte) (n int, last bool, err error) {
	n = copy(buf, s.carry)
	s.carry = nil
	m, err := ReadPart(ctx, s.r, buf[n:])
	n += m
	if err == io.EOF {
		return n, true, nil
	}
	if err != nil {
		return n, false, err
	}
	k, err := ReadPart(ctx, s.r, s.one[:])
	if err == io.EOF && k == 0 {
		return n, true, nil
	}
	if err != nil && err != io.EOF {
		return n, false, err
	}
	s.carry = s.one[:k]
	return n, false, nil
}
