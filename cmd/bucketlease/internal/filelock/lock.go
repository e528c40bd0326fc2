package cli

import "fmt"

// lockHolder is a process holding the file driver's lock on the lease
// object (file.LockHolder).
type lockHolder struct {
	Pid     int
	Stopped bool
}

// lockRows writes the holders of the lock on key as rows of printStatus.
func lockRows(key string, hs []lockHolder, row func(k, v string)) {
	for _, h := range hs {
		if h.Stopped {
			row("lock", fmt.Sprintf("the file driver's lock on %s is held by process %d, which is stopped "+
				"(SIGSTOP, Ctrl-Z, a debugger or a frozen cgroup): no one can write %s, take it over or break it until "+
				"it is resumed (kill -CONT %d) or ended (kill -KILL %d, or break --kill-stopped-lock-holder)", key, h.Pid, key, h.Pid, h.Pid))
			continue
		}
		row("lock", fmt.Sprintf("the file driver's lock on %s is held by process %d, writing it now", key, h.Pid))
	}
}

// lockHolderJSON is a holder of the file driver's lock on the lease
// object, in show --json.
type lockHolderJSON struct {
	Pid     int  `json:"pid"`
	Stopped bool `json:"stopped"`
}

func lockJSON(hs []lockHolder) []lockHolderJSON {
	var out []lockHolderJSON
	for _, h := range hs {
		out = append(out, lockHolderJSON(h))
	}
	return out
}
