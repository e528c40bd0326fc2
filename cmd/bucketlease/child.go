package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"time"

	"github.com/mushroomdb/bucketlease/lease"
)

// runUnderLease runs argv while the lease is held. It passes signals on to
// the command, and stops it (SIGTERM, then SIGKILL after grace) the moment
// the lease ends. It returns once the command has exited: nil or the
// command's exit status, or exit 124 if the lease ended under it.
func runUnderLease(e *env, l *lease.Lease, argv []string, sigs <-chan os.Signal, grace time.Duration, p *printer) error {
	if l.Err() != nil {
		return leaseEnded(l)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, e.stdout, e.stderr
	cmd.Env = append(os.Environ(), "BUCKETLEASE_KEY="+l.Key(), "BUCKETLEASE_INSTANCE_ID="+l.InstanceID())
	cmd.SysProcAttr = childProcAttr()
	if err := cmd.Start(); err != nil {
		return startError(argv[0], err)
	}
	pid := cmd.Process.Pid
	p.note("command-started", fmt.Sprintf("started %q (pid %d) under the lease", argv[0], pid), func(r *record) { r.PID = pid })
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	leaseDone := l.Done()
	var kill <-chan time.Time
	var stopped bool
	for { // ends when the command exits; once the lease ends, SIGKILL makes sure it does
		select {
		case s := <-sigs:
			p.note("signal", fmt.Sprintf("received %v; passing it on to pid %d", s, pid), func(r *record) { r.Signal = s.String(); r.PID = pid })
			signalGroup(cmd.Process, s)
		case <-leaseDone:
			leaseDone, stopped = nil, true
			p.note("stopping", fmt.Sprintf("the lease ended (%v): sending SIGTERM to pid %d, SIGKILL in %v", l.Err(), pid, grace),
				func(r *record) { r.PID = pid; r.Signal = "terminated" })
			signalGroup(cmd.Process, sigTerm)
			t := time.NewTimer(grace)
			defer t.Stop()
			kill = t.C
		case <-kill:
			kill = nil
			p.note("killing", fmt.Sprintf("pid %d still running %v after SIGTERM: sending SIGKILL", pid, grace), func(r *record) { r.PID = pid; r.Signal = "killed" })
			signalGroup(cmd.Process, sigKill)
		case err := <-exited:
			code, how := exitStatus(err)
			p.note("command-exited", fmt.Sprintf("%q (pid %d) %s", argv[0], pid, how), func(r *record) { r.PID = pid; r.Status = &code })
			// What the command left running in its group must not outlive
			// the lease either.
			if stopGroup(pid) {
				p.note("stopping", fmt.Sprintf("sent SIGTERM to the processes pid %d left behind in its process group", pid),
					func(r *record) { r.PID = pid; r.Signal = "terminated" })
			}
			if stopped || l.Err() != nil {
				return leaseEnded(l)
			}
			if code != 0 {
				return withCode(code, nil)
			}
			return nil
		}
	}
}

// startError maps a command that could not start to the shell's codes.
func startError(name string, err error) error {
	switch {
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		return withCode(127, fmt.Errorf("command %q not found: %w", name, err))
	default:
		return withCode(126, fmt.Errorf("command %q could not be started: %w", name, err))
	}
}
