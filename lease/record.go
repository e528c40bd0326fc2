package lease

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mushroomdb/bucketlease/lease/admin"
)

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
