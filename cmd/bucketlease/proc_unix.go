//go:build unix

package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

const (
	sigTerm = syscall.SIGTERM
	sigKill = syscall.SIGKILL
)

// signalGroup sends s to the command's process group (it is the group's
// leader), so that what it started gets it too.
func signalGroup(p *os.Process, s os.Signal) {
	sig, ok := s.(syscall.Signal)
	if !ok || syscall.Kill(-p.Pid, sig) != nil {
		_ = p.Signal(s)
	}
}

// exitStatus returns the command's exit code, 128+N for a command killed
// by signal N as shells report it, and a description.
func exitStatus(err error) (int, string) {
	if err == nil {
		return 0, "exited with status 0"
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return exitError, "failed: " + err.Error()
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), fmt.Sprintf("was killed by %v", ws.Signal())
	}
	return ee.ExitCode(), fmt.Sprintf("exited with status %d", ee.ExitCode())
}

// stopGroup sends SIGTERM to what is left of the process group pgid and
// reports whether anything was left.
func stopGroup(pgid int) bool { return syscall.Kill(-pgid, syscall.SIGTERM) == nil }
