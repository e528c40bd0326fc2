package lease_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/lease"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

func TestRecordJSONIsExactlyTheSpec(t *testing.T) {
	r := admin.Record{InstanceID: "abc", AcquiredAt: t0, RenewedAt: t0.Add(time.Second), TTLSeconds: 30}
	var m map[string]any
	if err := json.Unmarshal(r.Encode(), &m); err != nil {
		t.Fatal(err)
	}
	if len(m) != 4 || m["instance_id"] != "abc" || m["acquired_at"] != "2026-11-30T12:00:00Z" ||
		m["renewed_at"] != "2026-11-30T12:00:01Z" || m["ttl_s"] != float64(30) {
		t.Fatalf("record JSON = %s", r.Encode())
	}
	back, err := admin.DecodeRecord(r.Encode())
	if err != nil || !reflect.DeepEqual(back, admin.Record{InstanceID: "abc", AcquiredAt: t0, RenewedAt: t0.Add(time.Second), TTLSeconds: 30}) {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
}

func TestDecodeToleratesUnknownFields(t *testing.T) {
	r, err := admin.DecodeRecord([]byte(`{"instance_id":"x","acquired_at":"2026-01-01T00:00:00Z","renewed_at":"2026-01-01T00:00:00+01:00","ttl_s":30,"epoch":7}`))
	if err != nil || r.InstanceID != "x" {
		t.Fatalf("%+v, %v", r, err)
	}
}

func TestDecodeRefusesMalformed(t *testing.T) {
	cases := map[string]string{
		"empty":          ``,
		"not json":       `{garbage`,
		"array":          `[1,2]`,
		"null":           `null`,
		"wrong types":    `{"instance_id":7,"acquired_at":"2026-01-01T00:00:00Z","renewed_at":"2026-01-01T00:00:00Z","ttl_s":30}`,
		"ttl string":     `{"instance_id":"x","acquired_at":"2026-01-01T00:00:00Z","renewed_at":"2026-01-01T00:00:00Z","ttl_s":"30"}`,
		"ttl fraction":   `{"instance_id":"x","acquired_at":"2026-01-01T00:00:00Z","renewed_at":"2026-01-01T00:00:00Z","ttl_s":1.5}`,
		"negative ttl":   `{"instance_id":"x","acquired_at":"2026-01-01T00:00:00Z","renewed_at":"2026-01-01T00:00:00Z","ttl_s":-1}`,
		"enormous ttl":   `{"instance_id":"x","acquired_at":"2026-01-01T00:00:00Z","renewed_at":"2026-01-01T00:00:00Z","ttl_s":9223372036854775807}`,
		"no id":          `{"acquired_at":"2026-01-01T00:00:00Z","renewed_at":"2026-01-01T00:00:00Z","ttl_s":30}`,
		"empty id":       `{"instance_id":"","acquired_at":"2026-01-01T00:00:00Z","renewed_at":"2026-01-01T00:00:00Z","ttl_s":30}`,
		"bad time":       `{"instance_id":"x","acquired_at":"yesterday","renewed_at":"2026-01-01T00:00:00Z","ttl_s":30}`,
		"no renewed_at":  `{"instance_id":"x","acquired_at":"2026-01-01T00:00:00Z","ttl_s":30}`,
		"trailing":       `{"instance_id":"x","acquired_at":"2026-01-01T00:00:00Z","renewed_at":"2026-01-01T00:00:00Z","ttl_s":30} {}`,
		"not utf-8":      "{\"instance_id\":\"\xff\xfe\",\"acquired_at\":\"2026-01-01T00:00:00Z\",\"renewed_at\":\"2026-01-01T00:00:00Z\",\"ttl_s\":30}",
		"oversized":      `{"instance_id":"` + strings.Repeat("x", admin.MaxRecordSize) + `"}`,
		"ttl overflow":   `{"instance_id":"x","acquired_at":"2026-01-01T00:00:00Z","renewed_at":"2026-01-01T00:00:00Z","ttl_s":1e400}`,
		"year overflow":  `{"instance_id":"x","acquired_at":"99999-01-01T00:00:00Z","renewed_at":"2026-01-01T00:00:00Z","ttl_s":30}`,
		"nested garbage": `{"instance_id":{"a":[1,{"b":null}]},"ttl_s":30}`,
	}
	for name, data := range cases {
		if _, err := admin.DecodeRecord([]byte(data)); !errors.Is(err, admin.ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", name, err)
		}
	}
}

func TestStateAt(t *testing.T) {
	rec := func(renewed time.Duration, ttlS int64) admin.Record {
		return admin.Record{InstanceID: "x", AcquiredAt: t0, RenewedAt: t0.Add(renewed), TTLSeconds: ttlS}
	}
	cases := []struct {
		name string
		r    admin.Record
		want admin.State
	}{
		{"just renewed", rec(0, 30), admin.Fresh},
		{"one nanosecond before its TTL", rec(-30*time.Second+1, 30), admin.Fresh},
		{"exactly its TTL old", rec(-30*time.Second, 30), admin.Stale},
		{"long dead", rec(-24*time.Hour, 30), admin.Stale},
		{"stamped in the future within its TTL", rec(30*time.Second, 30), admin.Fresh},
		{"stamped in the future beyond its TTL", rec(30*time.Second+1, 30), admin.Suspect},
		{"TTL over MaxSaneTTL", rec(0, int64(admin.MaxSaneTTL/time.Second)+1), admin.Suspect},
		{"TTL at MaxSaneTTL", rec(0, int64(admin.MaxSaneTTL/time.Second)), admin.Fresh},
		{"released", rec(0, 0), admin.Released},
	}
	for _, c := range cases {
		if got := c.r.StateAt(t0); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestKeyAndInstanceID(t *testing.T) {
	if admin.Key("backups/db1") != "backups/db1/LEASE" || admin.Key("") != "LEASE" {
		t.Fatal("Key")
	}
	a, b := lease.NewInstanceID(), lease.NewInstanceID()
	if len(a) != 32 || a == b || strings.Trim(a, "0123456789abcdef") != "" {
		t.Fatalf("NewInstanceID: %q %q", a, b)
	}
}

// TestRecordWithEpochReadsAsTheSeedSpecsFourFields: a record with an
// epoch, a beginning and earlier holders round-trips, and a reader that
// knows only the seed specification's four fields reads them unchanged.
func TestRecordWithEpochReadsAsTheSeedSpecsFourFields(t *testing.T) {
	r := admin.Record{InstanceID: "abc", AcquiredAt: t0, RenewedAt: t0.Add(time.Second), TTLSeconds: 30,
		Epoch: 1796040447993298, Began: t0.Add(2 * time.Second),
		Before: []admin.Era{{Epoch: 1796040000000000, Began: t0.Add(-time.Hour)}}}
	back, err := admin.DecodeRecord(r.Encode())
	if err != nil || !reflect.DeepEqual(back, r) {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
	var seed struct {
		InstanceID string    `json:"instance_id"`
		AcquiredAt time.Time `json:"acquired_at"`
		RenewedAt  time.Time `json:"renewed_at"`
		TTLSeconds int64     `json:"ttl_s"`
	}
	dec := json.NewDecoder(bytes.NewReader(r.Encode()))
	if err := dec.Decode(&seed); err != nil || seed.InstanceID != "abc" || !seed.AcquiredAt.Equal(t0) ||
		!seed.RenewedAt.Equal(t0.Add(time.Second)) || seed.TTLSeconds != 30 {
		t.Fatalf("a seed-spec reader: %+v, %v", seed, err)
	}
}
