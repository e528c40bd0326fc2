//go:build !unix

package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

var (
	sigTerm os.Signal = os.Kill // no SIGTERM to send here: stop it
	sigKill os.Signal = os.Kill
)

func childProcAttr() *syscall.SysProcAttr { return nil }

func signalGroup(p *os.Process, s os.Signal) { _ = p.Signal(s) }

func exitStatus(err error) (int, string) {
	if err == nil {
		return 0, "exited with status 0"
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return exitError, "failed: " + err.Error()
	}
	return ee.ExitCode(), fmt.Sprintf("exited with status %d", ee.ExitCode())
}

// stopGroup does nothing: there are no process groups to stop here.
func stopGroup(int) bool { return false }
