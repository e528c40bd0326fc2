package filelock

import "fmt"

// A Holder is a process holding the file driver's lock on a key
// (file.LockHolder), as show --json reports it.
type Holder struct {
	Pid     int  `json:"pid"`
	Stopped bool `json:"stopped"`
}

// Rows writes the holders of the lock on key as rows of show's status.
func Rows(key string, hs []Holder, row func(k, v string)) {
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
