//go:build linux

package main

import (
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// treeGuarantee says, for docs and messages, how the watchdog finds what a
// command started on this platform.
const treeGuarantee = "child subreaper: every descendant, even one that left the process group or double-forked"

// becomeSubreaper makes orphaned descendants of this process its children
// rather than init's, so that none can escape the watchdog.
func becomeSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// commandAttr is how the watchdog starts the command: in the watchdog's own
// process group (which is hold's, so the terminal's job control reaches it),
// and killed by the kernel if the watchdog dies.
func commandAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// descendants returns the live processes below root, from /proc.
func descendants(root int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		ppid, err := strconv.Atoi(f[1])
		if err != nil {
			continue
		}
		children[ppid] = append(children[ppid], pid)
	}
	var out []int
	queue := []int{root}
	seen := map[int]bool{root: true}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
				queue = append(queue, c)
			}
		}
	}
	return out
}

// signalTree sends sig to every live descendant of this process and to the
// command's process group, and reports how many processes it reached.
func signalTree(cmdPid int, sig syscall.Signal) int {
	n := 0
	for _, p := range descendants(os.Getpid()) {
		if syscall.Kill(p, sig) == nil {
			n++
		}
	}
	return n
}

// monoNow reads CLOCK_MONOTONIC, which every process on the machine shares.
func monoNow() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic("clock_gettime(CLOCK_MONOTONIC): " + err.Error())
	}
	return ts.Nano()
}

// commandInHoldsGroup: the command runs in hold's process group, so the
// terminal's signals reach it directly.
const commandInHoldsGroup = true
