package admin

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mushroomdb/bucketlease/driver"
)

// MaxSaneTTL is the longest TTL a record is trusted with; longer is suspect.
const MaxSaneTTL = time.Hour

// BreakerID is the instance id of the record lease.Break writes.
const BreakerID = "bucketlease-break"

// MaxEpoch is the largest epoch a record carries: 2⁵³, the largest integer
// a JSON reader parsing doubles keeps exactly.
const MaxEpoch = 1 << 53

// MaxRecordSize bounds how much of a LEASE object is read; a larger object
// is suspect.
const MaxRecordSize = 4 << 10

// Key returns the lease object's key for prefix: "{prefix}/LEASE", or
// "LEASE"; trailing slashes of prefix are dropped.
func Key(prefix string) string {
	prefix = strings.TrimRight(prefix, "/")
	if prefix == "" {
		return "LEASE"
	}
	return prefix + "/LEASE"
}

// Record is the content of the LEASE object:
//
//	{"instance_id":"…","acquired_at":"…","renewed_at":"…","ttl_s":30,"epoch":1733356800123456}
//
// with RFC 3339 times. A TTL of zero marks a released lease. The first four
// fields are the seed specification's; its readers ignore the rest.
type Record struct {
	InstanceID string    `json:"instance_id"`
	AcquiredAt time.Time `json:"acquired_at"`
	RenewedAt  time.Time `json:"renewed_at"`
	TTLSeconds int64     `json:"ttl_s"`
	// Epoch orders the prefix's holders (docs/promises.md, "Epochs"); zero
	// from writers that keep none, which says nothing about order.
	Epoch uint64 `json:"epoch,omitempty"`
	// Began is when this holder's lease began on the service's clock, at
	// the latest; written from the first renewal on, where the driver
	// reports the service's time.
	Began time.Time `json:"began,omitzero"`
	// Before is the latest earlier holders, newest first (at most eight).
	Before []Era `json:"before,omitempty"`
	// Holder describes the writer for people; never trusted or compared.
	Holder *HolderInfo `json:"holder,omitempty"`
}

// HolderInfo is what a holder says about itself: never a secret or proof.
type HolderInfo struct {
	Host string `json:"host,omitempty"` // the machine's host name
	PID  int    `json:"pid,omitempty"`  // the process id
	User string `json:"user,omitempty"` // the user the process runs as
	Tool string `json:"tool,omitempty"` // the tool or command name, without its arguments
}

// Validate refuses holder information a record could not carry as text.
func (h *HolderInfo) Validate() error {
	if h == nil {
		return nil
	}
	for name, v := range map[string]string{"host": h.Host, "user": h.User, "tool": h.Tool} {
		if len(v) > 256 || !printsAsItself(v) {
			return fmt.Errorf("lease: Options.Holder.%s %q must be at most 256 bytes of text that prints as itself (no control or bidi characters)", name, v)
		}
	}
	return nil
}

// TTL returns the record's TTL as a duration.
func (r Record) TTL() time.Duration { return time.Duration(r.TTLSeconds) * time.Second }

// Encode returns the record's JSON. It panics on a time outside the years 1
// to 9999, which neither a decoded record nor the lease produces.
func (r Record) Encode() []byte {
	r.AcquiredAt = r.AcquiredAt.UTC()
	r.RenewedAt = r.RenewedAt.UTC()
	if !r.Began.IsZero() {
		r.Began = r.Began.UTC()
	}
	r.Before = slices.Clone(r.Before)
	for i := range r.Before {
		r.Before[i].Began = r.Before[i].Began.UTC()
	}
	b, err := json.Marshal(r)
	if err != nil {
		panic("lease: unencodable record: " + err.Error())
	}
	return b
}

// printsAsItself reports whether every character of UTF-8 s prints as
// itself (no control or bidi characters).
func printsAsItself(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return !strconv.IsPrint(r) })
}

// CheckKey refuses a lease key that breaks driver.CheckKey or does not
// print as itself (every message names it).
func CheckKey(key string) error {
	if err := driver.CheckKey(key); err != nil {
		return fmt.Errorf("lease %s: the prefix makes an invalid lease key: %w", strconv.Quote(key), err)
	}
	if !printsAsItself(key) {
		return fmt.Errorf("lease %s: %w: the prefix holds a character that does not print as itself (a bidi override, …), which would make every message naming the lease misleading",
			strconv.Quote(key), driver.ErrInvalidKey)
	}
	return nil
}

func inYears(t time.Time) bool {
	y := t.UTC().Year()
	return y >= 1 && y <= 9999
}

// ErrMalformed is wrapped by DecodeRecord's error for an object that is not
// a lease record.
var ErrMalformed = errors.New("malformed lease record")

// DecodeRecord parses a LEASE object, ignoring unknown fields; anything else
// amiss is an error wrapping ErrMalformed. It never panics.
func DecodeRecord(data []byte) (Record, error) {
	var r Record
	switch {
	case len(data) == 0:
		return r, fmt.Errorf("%w: the object is empty", ErrMalformed)
	case len(data) > MaxRecordSize:
		return r, fmt.Errorf("%w: the object is larger than %d bytes", ErrMalformed, MaxRecordSize)
	case !utf8.Valid(data):
		return r, fmt.Errorf("%w: the object is not UTF-8 text", ErrMalformed)
	}
	var raw struct {
		InstanceID *string         `json:"instance_id"`
		AcquiredAt *time.Time      `json:"acquired_at"`
		RenewedAt  *time.Time      `json:"renewed_at"`
		TTLSeconds *int64          `json:"ttl_s"`
		Epoch      *uint64         `json:"epoch"`
		Began      *time.Time      `json:"began"`
		Before     []Era           `json:"before"`
		Holder     json.RawMessage `json:"holder"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&raw); err != nil {
		return r, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if dec.More() {
		return r, fmt.Errorf("%w: trailing data after the JSON object", ErrMalformed)
	}
	switch {
	case raw.InstanceID == nil || *raw.InstanceID == "":
		return r, fmt.Errorf("%w: no instance_id", ErrMalformed)
	case !printsAsItself(*raw.InstanceID):
		return r, fmt.Errorf("%w: instance_id %s holds a character that does not print as itself", ErrMalformed, strconv.Quote(*raw.InstanceID))
	case raw.AcquiredAt == nil:
		return r, fmt.Errorf("%w: no acquired_at", ErrMalformed)
	case raw.RenewedAt == nil:
		return r, fmt.Errorf("%w: no renewed_at", ErrMalformed)
	case raw.TTLSeconds == nil:
		return r, fmt.Errorf("%w: no ttl_s", ErrMalformed)
	case *raw.TTLSeconds < 0:
		return r, fmt.Errorf("%w: negative ttl_s %d", ErrMalformed, *raw.TTLSeconds)
	case *raw.TTLSeconds > int64(100*365*24*time.Hour/time.Second):
		return r, fmt.Errorf("%w: ttl_s %d is beyond any clock", ErrMalformed, *raw.TTLSeconds)
	}
	for name, t := range map[string]time.Time{"acquired_at": *raw.AcquiredAt, "renewed_at": *raw.RenewedAt} {
		if !inYears(t) {
			return r, fmt.Errorf("%w: %s %s is outside the years 1 to 9999 in UTC", ErrMalformed, name, t.Format(time.RFC3339))
		}
	}
	r = Record{InstanceID: *raw.InstanceID, AcquiredAt: *raw.AcquiredAt, RenewedAt: *raw.RenewedAt, TTLSeconds: *raw.TTLSeconds}
	if raw.Epoch != nil {
		if *raw.Epoch > MaxEpoch {
			return Record{}, fmt.Errorf("%w: epoch %d is beyond %d, the largest a JSON reader keeps exactly", ErrMalformed, *raw.Epoch, uint64(MaxEpoch))
		}
		r.Epoch = *raw.Epoch
	}
	// What orders late writes only is dropped when out of range.
	// What a record remembers of time and earlier holders orders late
	// writes only; a part of it that is out of range is dropped, and
	// the record stays a record.
	if raw.Began != nil && inYears(*raw.Began) {
		r.Began = *raw.Began
	}
	for _, e := range raw.Before {
		if e.Epoch > 0 && e.Epoch <= MaxEpoch && inYears(e.Began) && len(r.Before) < maxBefore {
			r.Before = append(r.Before, e)
		}
	}
	// The holder's description is informational: one that does not parse
	// is dropped, and the record stays a record.
	var h HolderInfo
	if len(raw.Holder) > 0 && json.Unmarshal(raw.Holder, &h) == nil && h != (HolderInfo{}) && h.Validate() == nil {
		r.Holder = &h
	}
	return r, nil
}

// Same reports whether r and o are the same record, Holder aside.
func (r Record) Same(o Record) bool {
	return r.InstanceID == o.InstanceID && r.AcquiredAt.Equal(o.AcquiredAt) &&
		r.RenewedAt.Equal(o.RenewedAt) && r.TTLSeconds == o.TTLSeconds && r.Epoch == o.Epoch &&
		r.Began.Equal(o.Began) && slices.EqualFunc(r.Before, o.Before, Era.equal)
}

// State is what a reader makes of a LEASE object at a moment of its clock.
type State int

const (
	// Free: there is no LEASE object.
	Free State = iota
	// Fresh: renewed less than its TTL ago, or stamped less than its TTL in
	// the future. Nobody may take it.
	Fresh
	// Stale: renewed its TTL ago or longer. It may be taken over.
	Stale
	// Released: its holder released it (TTL zero). It may be taken over.
	Released
	// Suspect: stamped more than its TTL in the future, TTL over MaxSaneTTL,
	// or not a record; taken over after one of a contender's TTLs unchanged.
	Suspect
)

// String returns the state's name, as the bucketlease command prints it.
func (s State) String() string {
	if names := [...]string{"free", "fresh", "stale", "released", "suspect"}; s >= 0 && int(s) < len(names) {
		return names[s]
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// StateAt classifies r at now on the reader's clock alone (see Judge).
func (r Record) StateAt(now time.Time) State {
	ttl := r.TTL()
	switch {
	case r.TTLSeconds == 0:
		return Released
	case ttl > MaxSaneTTL:
		return Suspect
	case r.RenewedAt.Sub(now) > ttl:
		return Suspect
	case now.Sub(r.RenewedAt) < ttl:
		return Fresh
	default:
		return Stale
	}
}

// Suspicion says why a record in state Suspect at now is suspect.
func (r Record) Suspicion(now time.Time) string {
	if r.TTL() > MaxSaneTTL {
		return fmt.Sprintf("its ttl_s %d is over the %v limit", r.TTLSeconds, MaxSaneTTL)
	}
	return fmt.Sprintf("it is stamped %v in the future, more than its own TTL", r.RenewedAt.Sub(now).Round(time.Second))
}

// IsScratchKey reports whether key's last segment is named as a lease's
// scratch key (LEASE.<kind>-probe-<16 hex digits>). Those of the lease on
// prefix P start with P + "/LEASE."; they hold nothing of a user's, and one
// older than a minute is a leftover of a dead process, safe to delete.
func IsScratchKey(key string) bool {
	i := strings.LastIndex(key, "/") + 1
	name := key[i:]
	rest, ok := strings.CutPrefix(name, "LEASE.")
	if !ok {
		return false
	}
	kind, hexa, ok := strings.Cut(rest, "-probe-")
	if !ok || kind == "" || len(hexa) != 16 {
		return false
	}
	_, err := hex.DecodeString(hexa)
	return err == nil
}
