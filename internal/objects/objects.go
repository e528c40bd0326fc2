// Package objects holds what this module's callers of a driver.Bucket
// share beyond the driver contract: a bounded read of a whole object and a
// made-up version no object will reach.
package objects

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/mushroomdb/bucketlease/driver"
)

// ErrTooLarge: an object was larger than the reader's bound (ReadAll).
var ErrTooLarge = errors.New("object too large")

// FakeVersion returns a version with the shape of v but every digit
// changed, so that a service's refusal of IfMatch(FakeVersion(v)) is its
// own decision, not a parse error; "0" for the empty Version. The object
// must never reach it, which holds for ETags and GCS generations; a driver
// with counter versions must scramble them (obligation 5 in
// docs/drivers.md).
func FakeVersion(v driver.Version) driver.Version {
	if v == "" {
		return "0"
	}
	b := []byte(v)
	for i, c := range b {
		switch {
		case c >= '0' && c <= '8':
			b[i] = c + 1
		case c == '9':
			b[i] = '1' // never '0', which a generation number reads as "absent"
		case c >= 'a' && c <= 'e', c >= 'A' && c <= 'E':
			b[i] = c + 1
		case c == 'f':
			b[i] = 'a'
		case c == 'F':
			b[i] = 'A'
		}
	}
	return driver.Version(b)
}

// ReadAll reads at most limit bytes of key and returns them with their
// Attrs. A body longer than limit is an error wrapping ErrTooLarge, so a
// hostile or corrupt object cannot exhaust memory.
func ReadAll(ctx context.Context, b driver.Bucket, key string, limit int64, opts driver.GetOptions) ([]byte, driver.Attrs, error) {
	rc, a, err := b.Get(ctx, key, opts)
	if err != nil {
		return nil, driver.Attrs{Time: a.Time}, err
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return nil, driver.Attrs{Time: a.Time}, &driver.OpError{Op: "get", Key: key, Err: err}
	}
	if int64(len(data)) > limit {
		return nil, a, &driver.OpError{Op: "get", Key: key, Kind: ErrTooLarge,
			Err: fmt.Errorf("object is larger than %d bytes", limit)}
	}
	return data, a, nil
}
