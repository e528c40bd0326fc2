package lease

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/user"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mushroomdb/bucketlease/clock"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/besteffort"
	"github.com/mushroomdb/bucketlease/internal/leaseseam"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

// Options configure a Contender. The zero value (or nil) gives a 30 s TTL, a
// new random instance id, the system clock and slog.Default().
type Options struct {
	// TTL is how long the lease stays fresh after each renewal; renewals
	// go out every TTL/3. Whole seconds, 1s to admin.MaxSaneTTL.
	// Default DefaultTTL.
	TTL time.Duration
	// InstanceID names this instance in the LEASE object. It must be unique
	// among the processes contending for the prefix (ErrInstanceInUse
	// catches live duplicates); ownership is proven by a record's content,
	// not by this id. Default a new random id (32 hex digits).
	InstanceID string
	// Logger receives every state change. Default slog.Default().
	Logger *slog.Logger
	// OnEvent, if set, is called synchronously with every state change; it
	// must return quickly.
	OnEvent func(Event)
	// StateDir, if set, is an absolute path to a local directory private to
	// this instance, where the Contender keeps a lock and a note of every
	// record it writes, so that a restart (same InstanceID and StateDir, the
	// previous process dead) adopts its lease at once; a twin or a stopped
	// predecessor never is. Not for network file systems. Close the
	// Contender to drop the lock.
	StateDir string
	// Holder, if set, is written into every record for people (Inspect,
	// `bucketlease show`); never trusted for ownership. ThisProcess fills it.
	Holder *admin.HolderInfo
	// Wait makes Acquire wait while another instance holds the lease,
	// trying again when it could be taken over (at least every TTL/3).
	Wait bool
	// seams replace what the lease takes from the process (leaseseam).
	seams leaseseam.Seams
}

// settings are Options with the defaults filled in.
type settings struct {
	ttl     time.Duration
	id      string
	clock   clock.Clock
	logger  *slog.Logger
	onEvent func(Event)
	getenv  func(string) string
	retry   time.Duration
	rand    io.Reader
	state   string
	holder  *admin.HolderInfo
	wait    bool
}

func (o *Options) resolve() (*settings, error) {
	if o == nil {
		o = &Options{}
	}
	s := &settings{ttl: o.TTL, id: o.InstanceID, clock: o.seams.Clock, logger: o.Logger,
		onEvent: o.OnEvent, getenv: o.seams.Getenv, retry: o.seams.RetryInterval, rand: o.seams.Rand, state: o.StateDir, holder: o.Holder, wait: o.Wait}
	if s.ttl == 0 {
		s.ttl = DefaultTTL
	}
	if s.ttl < time.Second || s.ttl > admin.MaxSaneTTL || s.ttl%time.Second != 0 {
		return nil, fmt.Errorf("lease: TTL %v must be a whole number of seconds between 1s and %v", o.TTL, admin.MaxSaneTTL)
	}
	if s.id == "" {
		s.id = newInstanceID()
	}
	if err := checkInstanceID(s.id); err != nil {
		return nil, err
	}
	if err := s.holder.Validate(); err != nil {
		return nil, err
	}
	if s.clock == nil {
		s.clock = clock.System{}
	}
	if s.logger == nil {
		s.logger = slog.Default()
	}
	if s.getenv == nil {
		s.getenv = os.Getenv
	}
	if s.rand == nil {
		s.rand = rand.Reader
	}
	if s.retry <= 0 {
		s.retry = max(s.ttl/15, 100*time.Millisecond)
	}
	return s, nil
}

// bucketFor applies EnvConditional: the bucket the lease uses, or an error
// for an unknown value, or for a driver declaring weaker than conditional
// exclusion without the switch. Best-effort always warns.
func (s *settings) bucketFor(b driver.Bucket, key string) (driver.Bucket, error) {
	switch v := s.getenv(EnvConditional); v {
	case "", "on":
	case "off":
		s.logger.Warn("lease exclusion is best-effort: each step is a read then an unconditional write, so two instances that start together may both pass",
			slog.String("key", key), slog.String("switch", EnvConditional+"=off"))
		return besteffort.Wrap(b), nil
	default:
		return nil, fmt.Errorf("lease: %s=%q: the value must be \"on\" (the default) or \"off\"", EnvConditional, v)
	}
	caps := b.Capabilities()
	why := ""
	if caps.Reason != "" {
		why = " (" + caps.Reason + ")"
	}
	switch {
	case caps.Exclusion == driver.Conditional:
		return b, nil
	case caps.Exclusion == driver.BestEffort:
		return nil, fmt.Errorf("acquire %s: %w: its driver declares only best-effort exclusion (read then write)%s; set %s=off to accept that",
			key, ErrPreconditionsIgnored, why, EnvConditional)
	default:
		return nil, fmt.Errorf("acquire %s: %w: its driver declares no exclusion%s; set %s=off to run best-effort",
			key, ErrPreconditionsIgnored, why, EnvConditional)
	}
}

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

// DefaultTTL is the TTL of a lease whose Options leave it unset.
const DefaultTTL = 30 * time.Second

// newInstanceID returns a new random instance id: 16 bytes as 32 hex digits.
func newInstanceID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ThisProcess describes the calling process for Options.Holder; tool is a
// name such as "pg_dump", never a command line (it may carry secrets).
func ThisProcess(tool string) *admin.HolderInfo {
	h := &admin.HolderInfo{PID: os.Getpid(), Tool: tool}
	h.Host, _ = os.Hostname()
	if u, err := user.Current(); err == nil {
		h.User = u.Username
	}
	return h
}

// checkWall refuses a wall clock outside the years 1 to 9999, which no
// record can carry.
func checkWall(t time.Time) error {
	if y := t.UTC().Year(); y < 1 || y > 9999 {
		return fmt.Errorf("lease: the wall clock reads %s, outside the years 1 to 9999; fix the machine's clock", t.UTC().Format(time.RFC3339))
	}
	return nil
}

// checkInstanceID refuses an id that the record could not carry unchanged.
func checkInstanceID(id string) error {
	switch {
	case len(id) > 256:
		return fmt.Errorf("lease: instance id of %d bytes is too long; at most 256", len(id))
	case !utf8.ValidString(id):
		return errors.New("lease: instance id is not UTF-8 text, so the LEASE record could not carry it unchanged")
	case !printsAsItself(id):
		return fmt.Errorf("lease: instance id %q holds a character that does not print as itself (a control character, a bidi override, …), so that messages naming it could not show it", id)
	}
	return nil
}

// printsAsItself reports whether every character of UTF-8 s prints as
// itself (no control or bidi characters).
func printsAsItself(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return !strconv.IsPrint(r) })
}
