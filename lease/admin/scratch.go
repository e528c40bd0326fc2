package admin

import (
	"encoding/hex"
	"strings"
)

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
