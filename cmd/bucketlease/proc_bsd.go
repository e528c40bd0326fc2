//go:build unix && !linux

package main

import "syscall"

// childProcAttr puts the command in its own process group, so that signals
// reach everything it starts.
func childProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
