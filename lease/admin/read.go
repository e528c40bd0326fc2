package admin

import (
	"context"
	"errors"
	"fmt"

	"github.com/mushroomdb/bucketlease/clock"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/internal/objects"
)

// Reading is a LEASE object read back: the record, or why it is not one,
// and what the answer said about the service's clock.
type Reading struct {
	Record  Record
	Err     error         // wraps ErrMalformed: the object is not a record
	Service *ServiceClock // nil when the driver reported no service time
}

// Read reads the lease object at key, timed on clk's wall clock; Service is
// set whenever the driver reported the time, driver.ErrNotExist included.
func Read(ctx context.Context, clk clock.Clock, b driver.Bucket, key string) (Reading, driver.Version, error) {
	var data []byte
	a, svc, err := TimedCall(clk, func() (a driver.Attrs, err error) {
		data, a, err = objects.ReadAll(ctx, b, key, MaxRecordSize, driver.GetOptions{})
		return a, err
	})
	v := a.Version
	if errors.Is(err, objects.ErrTooLarge) {
		return Reading{Err: fmt.Errorf("%w: the object is larger than %d bytes", ErrMalformed, MaxRecordSize), Service: svc}, v, nil
	}
	if err != nil {
		return Reading{Service: svc}, "", err
	}
	rec, derr := DecodeRecord(data)
	return Reading{Record: rec, Err: derr, Service: svc}, v, nil
}
