//go:build unix && !linux

package supervise

import (
	"errors"
	"syscall"
)

// watchdogModes has one way here, without a PID namespace: the watchdog in
// its own session, signalling the command's process group.
func watchdogModes(bool) []Mode {
	return []Mode{{Name: "session", Words: "in its own session", sys: &syscall.SysProcAttr{Setsid: true}}}
}

// hostPID is nsPid: there are no PID namespaces here.
func hostPID(nsPid int) int { return nsPid }

// BecomeSubreaper is not available here: processes that leave the
// command's process group escape the watchdog.
func BecomeSubreaper() error { return errors.New("no child subreaper on this system") }

// commandAttr starts the command in its own process group.
func commandAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// descendants is not known here beyond the command's process group.
func descendants(int) []int { return nil }

// signalTree sends sig to the command's process group and reports how many
// groups (0 or 1) it reached.
func signalTree(cmdPid int, sig syscall.Signal) int {
	if cmdPid > 0 && syscall.Kill(-cmdPid, sig) == nil {
		return 1
	}
	return 0
}
