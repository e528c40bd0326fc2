package lease_test

import (
	"bytes"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mushroomdb/bucketlease/lease/admin"
)

// FuzzDecodeRecord feeds DecodeRecord arbitrary bytes. Properties: it never
// panics; a refusal wraps ErrMalformed and returns the zero Record; an
// accepted record has an instance id and a TTL in range, came from at most
// MaxRecordSize bytes of UTF-8, re-encodes to a record that decodes to the
// same values, and the re-encoding is a fixed point; StateAt is total.
func FuzzDecodeRecord(f *testing.F) {
	for _, s := range []string{
		`{"instance_id":"abc","acquired_at":"2026-11-30T12:00:00Z","renewed_at":"2026-11-30T12:00:01Z","ttl_s":30}`,
		`{"instance_id":"x","acquired_at":"2026-01-01T00:00:00Z","renewed_at":"2026-01-01T00:00:00+01:00","ttl_s":30,"epoch":7}`,
		`{"instance_id":"x","acquired_at":"0001-01-01T00:00:00Z","renewed_at":"9999-12-31T23:59:59Z","ttl_s":0}`,
		`{"instance_id":"x","acquired_at":"2026-01-01T00:00:00Z","renewed_at":"2026-01-01T00:00:00Z","ttl_s":3153600000}`,
		`{"instance_id":"x","acquired_at":"2026-01-01T00:00:00Z","renewed_at":"2026-01-01T00:00:00Z","ttl_s":-1}`,
		`{"instance_id":"x","acquired_at":"2026-01-01T00:00:00.123456789Z","renewed_at":"2026-01-01T00:00:00Z","ttl_s":1e3}`,
		`{"instance_id":7}`, `null`, `[]`, `{`, ``, "\xff\xfe", `{"instance_id":"\u0000"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := admin.DecodeRecord(data)
		if err != nil {
			if !errors.Is(err, admin.ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			if !reflect.DeepEqual(r, admin.Record{}) {
				t.Fatalf("a refused record came back as %+v", r)
			}
			return
		}
		if r.InstanceID == "" || r.TTLSeconds < 0 || r.TTL() < 0 {
			t.Fatalf("accepted a record with no id or a negative TTL: %+v", r)
		}
		if len(data) > admin.MaxRecordSize || !utf8.Valid(data) {
			t.Fatalf("accepted %d bytes (valid UTF-8: %v)", len(data), utf8.Valid(data))
		}
		enc := r.Encode()
		back, err := admin.DecodeRecord(enc)
		if err != nil {
			t.Fatalf("decoded %q, but its re-encoding %q does not decode: %v", data, enc, err)
		}
		if back.InstanceID != r.InstanceID || !back.AcquiredAt.Equal(r.AcquiredAt) ||
			!back.RenewedAt.Equal(r.RenewedAt) || back.TTLSeconds != r.TTLSeconds {
			t.Fatalf("round trip changed the record: %+v became %+v", r, back)
		}
		if again := back.Encode(); !bytes.Equal(again, enc) {
			t.Fatalf("encoding is not a fixed point: %q then %q", enc, again)
		}
		for _, now := range []time.Time{t0, r.RenewedAt, r.RenewedAt.Add(r.TTL()), {}, time.Unix(1<<40, 0)} {
			switch st := r.StateAt(now); st {
			case admin.Fresh, admin.Stale, admin.Released, admin.Suspect:
			default:
				t.Fatalf("StateAt(%v) = %v", now, st)
			}
		}
	})
}

// FuzzRecordRoundTrip builds records from their fields: every record the
// lease could write (a non-empty UTF-8 id that prints as itself, times in years 1..9999, a TTL
// from zero to MaxSaneTTL) encodes to at most MaxRecordSize bytes and
// decodes to itself.
func FuzzRecordRoundTrip(f *testing.F) {
	f.Add("0123456789abcdef0123456789abcdef", int64(1796040000), int64(1796040001), int64(0), int64(30))
	f.Add("x", int64(-62135596800), int64(253402300799), int64(999999999), int64(0))
	f.Add("instance \"quoted\" \\ é ☃", int64(0), int64(0), int64(1), int64(3600))
	f.Fuzz(func(t *testing.T, id string, acq, ren, nanos, ttlS int64) {
		const minUnix, maxUnix = -62135596800, 253402300799 // years 1 and 9999, UTC
		if id == "" || !utf8.ValidString(id) || strings.ContainsFunc(id, func(r rune) bool { return !strconv.IsPrint(r) }) || len(id) > 256 || acq < minUnix || acq > maxUnix ||
			ren < minUnix || ren > maxUnix || ttlS < 0 || ttlS > int64(admin.MaxSaneTTL/time.Second) {
			t.Skip()
		}
		nanos = (nanos%1e9 + 1e9) % 1e9
		r := admin.Record{InstanceID: id, AcquiredAt: time.Unix(acq, nanos), RenewedAt: time.Unix(ren, nanos), TTLSeconds: ttlS}
		enc := r.Encode()
		if len(enc) == 0 || len(enc) > admin.MaxRecordSize {
			t.Fatalf("%+v encodes to %d bytes", r, len(enc))
		}
		back, err := admin.DecodeRecord(enc)
		if err != nil {
			t.Fatalf("%+v: %v", r, err)
		}
		if back.InstanceID != id || !back.AcquiredAt.Equal(r.AcquiredAt) || !back.RenewedAt.Equal(r.RenewedAt) || back.TTLSeconds != ttlS {
			t.Fatalf("round trip: %+v became %+v", r, back)
		}
	})
}
