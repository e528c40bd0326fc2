package admin

import (
	"encoding/hex"
	"strings"
)

// IsScratchKey reports whether key is named as a scratch key that the lease
// writes beside a lease object ({prefix}/LEASE.acquire-probe-…,
// LEASE.break-probe-…, LEASE.stream-probe-…) to prove that a path applies
// preconditions. It looks at the key's last segment only, so it cannot
// tell a lease's scratch key from a key of the caller's deeper down that
// is named like one: a scratch key of the lease on prefix P is one that
// IsScratchKey accepts and that sits directly beside P's lease object
// (it starts with P + "/LEASE."). Such a key holds nothing of a user's; one
// older than a minute is a leftover of a process that died during a
// probe, and is safe to delete.
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
