//go:build linux

package main

import "syscall"

// childProcAttr puts the command in its own process group, so that signals
// reach everything it starts, and has the kernel kill it if bucketlease
// dies: nobody would renew the lease any more.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
