package lease

import (
	"context"

	"github.com/mushroomdb/bucketlease/internal/leaseseam"
)

func init() {
	leaseseam.Set = func(opts any, s leaseseam.Seams) { opts.(*Options).seams = s }
	leaseseam.Renew = func(ctx context.Context, l any) error { return l.(*Lease).renew(ctx) }
	leaseseam.Inside = func(l any) leaseseam.Facts {
		ll := l.(*Lease)
		ll.mu.Lock()
		defer ll.mu.Unlock()
		return leaseseam.Facts{TTL: ll.s.ttl, Version: ll.version, RenewedAt: ll.rec.RenewedAt,
			ServiceClock: ll.svc != nil, Stamped: ll.caps.Metadata}
	}
}
