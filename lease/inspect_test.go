package lease_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/internal/leaseseam"
	"github.com/mushroomdb/bucketlease/lease"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

var inspectNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func putRecord(t *testing.T, b driver.Bucket, key string, data []byte) driver.Version {
	t.Helper()
	a, err := b.Put(context.Background(), key, data, driver.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return a.Version
}

func TestInspectStates(t *testing.T) {
	rec := func(renewedAgo time.Duration, ttl int64) []byte {
		return admin.Record{InstanceID: "alpha", AcquiredAt: inspectNow.Add(-time.Hour),
			RenewedAt: inspectNow.Add(-renewedAgo), TTLSeconds: ttl}.Encode()
	}
	cases := []struct {
		name       string
		data       []byte // nil: no object
		state      admin.State
		holder     string
		takeoverAt time.Time
		reason     string
	}{
		{"free", nil, admin.Free, "", inspectNow, ""},
		{"fresh", rec(10*time.Second, 30), admin.Fresh, "alpha", inspectNow.Add(20 * time.Second), ""},
		{"stale", rec(31*time.Second, 30), admin.Stale, "alpha", inspectNow, ""},
		{"released", rec(time.Second, 0), admin.Released, "alpha", inspectNow, ""},
		{"future", rec(-2*time.Minute, 30), admin.Suspect, "alpha", time.Time{}, "future"},
		{"huge ttl", rec(0, 7200), admin.Suspect, "alpha", time.Time{}, "limit"},
		{"garbage", []byte("not json"), admin.Suspect, "", time.Time{}, "malformed"},
		{"oversized", bytes.Repeat([]byte("x"), admin.MaxRecordSize+1), admin.Suspect, "", time.Time{}, "larger"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := machineClocksOnly()
			var v driver.Version
			if c.data != nil {
				v = putRecord(t, b, "p/LEASE", c.data)
			}
			st, err := admin.Inspect(context.Background(), bucket.New(b, "p"), inspectNow)
			if err != nil {
				t.Fatal(err)
			}
			if st.Key != "p/LEASE" || st.State != c.state || st.Holder() != c.holder || st.Version != v {
				t.Errorf("got key %q state %v holder %q version %q; want p/LEASE %v %q %q",
					st.Key, st.State, st.Holder(), st.Version, c.state, c.holder, v)
			}
			if !st.TakeoverAt.Equal(c.takeoverAt) {
				t.Errorf("TakeoverAt = %v, want %v", st.TakeoverAt, c.takeoverAt)
			}
			if !strings.Contains(st.Reason, c.reason) || (c.reason == "") != (st.Reason == "") {
				t.Errorf("Reason = %q, want one mentioning %q", st.Reason, c.reason)
			}
		})
	}
}

// TestInspectAgreesWithAcquire: what Inspect calls Fresh, Acquire refuses
// with the same holder and takeover time.
func TestInspectAgreesWithAcquire(t *testing.T) {
	b := machineClocksOnly()
	putRecord(t, b, "LEASE", admin.Record{InstanceID: "alpha", AcquiredAt: time.Now().Add(-time.Minute),
		RenewedAt: time.Now().Add(-5 * time.Second), TTLSeconds: 30}.Encode())
	st, err := admin.Inspect(context.Background(), bucket.New(b, ""), time.Now())
	if err != nil || st.State != admin.Fresh {
		t.Fatalf("Inspect: %+v, %v", st, err)
	}
	_, err = lease.Acquire(context.Background(), bucket.New(b, ""), leaseseam.With(&lease.Options{InstanceID: "beta"}, leaseseam.Seams{Getenv: func(string) string { return "" }}))
	var held *lease.HeldError
	if !errors.As(err, &held) {
		t.Fatalf("Acquire: %v, want a HeldError", err)
	}
	if held.Holder() != st.Holder() || !held.TakeoverAt.Equal(st.TakeoverAt) || held.Version != st.Version {
		t.Errorf("Acquire saw %s until %v at %s; Inspect saw %s until %v at %s",
			held.Holder(), held.TakeoverAt, held.Version, st.Holder(), st.TakeoverAt, st.Version)
	}
}

type brokenBucket struct{ driver.Bucket }

func (brokenBucket) Get(context.Context, string, driver.GetOptions) (io.ReadCloser, driver.Attrs, error) {
	return nil, driver.Attrs{}, errors.New("connection refused")
}

func TestInspectReadError(t *testing.T) {
	_, err := admin.Inspect(context.Background(), bucket.New(brokenBucket{machineClocksOnly()}, "p"), inspectNow)
	if err == nil || !strings.Contains(err.Error(), "p/LEASE") || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("err = %v, want one naming the key and the cause", err)
	}
}
