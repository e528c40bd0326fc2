//go:build linux

package supervise

import (
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// watchdogModes are the ways to start the watchdog, best first. In a new
// PID namespace (needing CAP_SYS_ADMIN, or a user namespace mapping only
// our uid and gid) the kernel kills every process in it when the watchdog
// dies, however it dies, and none can leave. Otherwise the watchdog runs in
// its own session, out of reach of signals to hold's group, as a child
// subreaper that finds every descendant. With pidNS false only that is tried.
func watchdogModes(pidNS bool) []Mode {
	uid, gid := os.Getuid(), os.Getgid()
	modes := []Mode{
		{Name: "pid-namespace", Words: "in a new PID namespace", SharesGroup: true,
			sys: &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID, Pdeathsig: syscall.SIGKILL}},
		{Name: "user-pid-namespace", Words: "in a new user and PID namespace", SharesGroup: true,
			sys: &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID, Pdeathsig: syscall.SIGKILL,
				UidMappings:                []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
				GidMappings:                []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
				GidMappingsEnableSetgroups: false}},
		{Name: "session", Words: "in its own session (no PID namespace)", SharesGroup: false,
			sys: &syscall.SysProcAttr{Setsid: true}},
	}
	if !pidNS {
		return modes[2:]
	}
	return modes
}

// inPIDNamespace reports whether this process is a PID namespace's init.
func inPIDNamespace() bool { return os.Getpid() == 1 }

// BecomeSubreaper makes orphaned descendants of this process its children
// rather than init's, so that none can escape the watchdog.
func BecomeSubreaper() error { return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) }

// commandAttr starts the command in the watchdog's process group (hold's, in
// a PID namespace, for job control), killed if the watchdog dies.
func commandAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }

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

// signalTree sends sig to every live descendant (in a PID namespace, every
// other process) and returns how many it reached.
func signalTree(cmdPid int, sig syscall.Signal) int {
	if inPIDNamespace() {
		return signalNamespace(sig)
	}
	n := 0
	for _, p := range descendants(os.Getpid()) {
		if syscall.Kill(p, sig) == nil {
			n++
		}
	}
	return n
}

// signalNamespace sends sig to every other process in this PID namespace
// (kill(-1)) and counts them by namespace, since /proc is the host's.
func signalNamespace(sig syscall.Signal) int {
	n, err := countNamespace()
	if err != nil { // cannot count: kill(-1) still reaches them all
		if syscall.Kill(-1, 0) != nil {
			return 0
		}
		n = 1
	}
	if n > 0 && sig != 0 {
		_ = syscall.Kill(-1, sig)
	}
	return n
}

// countNamespace counts the other live processes in this PID namespace.
func countNamespace() (int, error) {
	self, err := os.Readlink("/proc/self")
	if err != nil {
		return 0, err
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return 0, err
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range entries {
		name := e.Name()
		if name == self || name[0] < '0' || name[0] > '9' {
			continue
		}
		if l, err := os.Readlink("/proc/" + name + "/ns/pid"); err != nil || l != ns {
			continue
		}
		if st := procStat(name); st != "" && st != "Z" && st != "X" {
			n++
		}
	}
	return n, nil
}

// procStat returns the state letter of /proc/NAME/stat, or "".
func procStat(name string) string {
	b, err := os.ReadFile("/proc/" + name + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || len(s) < i+3 {
		return ""
	}
	return s[i+2 : i+3]
}

// hostPID returns the host's pid for nsPid, this process's child in its PID
// namespace (outside one, nsPid), so an operator can find the command.
func hostPID(nsPid int) int {
	if !inPIDNamespace() {
		return nsPid
	}
	self, err := os.Readlink("/proc/self")
	if err != nil {
		return nsPid
	}
	// A child is listed under the thread that started it.
	tasks, err := os.ReadDir("/proc/" + self + "/task")
	if err != nil {
		return nsPid
	}
	var children []string
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/" + self + "/task/" + t.Name() + "/children")
		if err == nil {
			children = append(children, strings.Fields(string(b))...)
		}
	}
	for _, c := range children {
		st, err := os.ReadFile("/proc/" + c + "/status")
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(st), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "NSpid:" && f[len(f)-1] == strconv.Itoa(nsPid) {
				if h, err := strconv.Atoi(c); err == nil {
					return h
				}
			}
		}
	}
	return nsPid
}
