package lease_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/mem"
	"github.com/mushroomdb/bucketlease/lease"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// TestBucketTextNeverPrintedRaw: what the lease prints comes from the
// bucket only as text that prints as itself. A record whose instance_id
// does not (an escape sequence, a bidi override) is malformed, so a
// HeldError never names it; a prefix that does not is refused before any
// request; a record stamped ahead of the reader says so.
func TestBucketTextNeverPrintedRaw(t *testing.T) {
	for _, id := range []string{"a\x1b[31mred", "x\u202etxt.exe", "bell\a", "zero\u200bwidth"} {
		data := foreign(id, t0, 30)
		if _, err := admin.DecodeRecord([]byte(data)); !errors.Is(err, admin.ErrMalformed) || strings.Contains(err.Error(), id) {
			t.Errorf("DecodeRecord of instance_id %q: %v; want ErrMalformed, the id quoted", id, err)
		}
		b := &mem.Bucket{}
		put(t, b, data)
		_, err := lease.Acquire(context.Background(), bucket.New(b, "db1"), opts("b", nil, nil))
		if err != nil && strings.Contains(err.Error(), id) {
			t.Errorf("acquire over a record of instance_id %q printed it raw: %v", id, err)
		}
		if _, err := lease.Acquire(context.Background(), bucket.New(&mem.Bucket{}, id), opts("b", nil, nil)); !errors.Is(err, driver.ErrInvalidKey) || strings.Contains(err.Error(), id) {
			t.Errorf("acquire on prefix %q: %v; want ErrInvalidKey with the prefix quoted", id, err)
		}
		if _, err := admin.Inspect(context.Background(), bucket.New(&mem.Bucket{}, id), t0); !errors.Is(err, driver.ErrInvalidKey) {
			t.Errorf("inspect of prefix %q: %v; want ErrInvalidKey", id, err)
		}
		if _, err := lease.NewContender(bucket.New(&mem.Bucket{}, "db1"), opts(id, nil, nil)); err == nil || strings.Contains(err.Error(), id) {
			t.Errorf("an instance id %q was taken, or printed raw: %v", id, err)
		}
	}
	if _, err := admin.DecodeRecord([]byte(foreign(`host "a" ü\`, t0, 30))); err != nil {
		t.Errorf("an instance id of printable text was refused: %v", err)
	}

	rec := admin.Record{InstanceID: "ahead", RenewedAt: t0.Add(90 * time.Second), TTLSeconds: 30}
	msg := (&lease.HeldError{Status: admin.Status{Key: "db1/LEASE", Record: &rec, State: admin.Fresh, Now: t0, TakeoverAt: t0.Add(2 * time.Minute)}}).Error()
	if !strings.Contains(msg, "stamped 1m30s in the future") || strings.Contains(msg, "-") {
		t.Errorf("a record stamped ahead reads: %s", msg)
	}
}
