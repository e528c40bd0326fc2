//go:build unix

package main

import (
	"os/exec"
	"syscall"
)

// setGroup runs cmd in a process group of its own and makes a cancel kill
// the whole group: go test and the test binaries and processes it started.
func setGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
