//go:build linux

package file

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// maxLockLines bounds how many lines of /proc/locks one look reads.
const maxLockLines = 100000

// lockHolders returns the processes that hold a flock(2) on the file st,
// from /proc/locks ("1: FLOCK  ADVISORY  WRITE PID MAJ:MIN:INODE 0 EOF"),
// and whether each is stopped. Waiters ("->") and pids of other pid
// namespaces (0 or -1) are left out.
func lockHolders(st fs.FileInfo) ([]LockHolder, error) {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return nil, nil
	}
	want := fmt.Sprintf("%02x:%02x:%d", unix.Major(uint64(sys.Dev)), unix.Minor(uint64(sys.Dev)), sys.Ino)
	f, err := os.Open("/proc/locks")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []LockHolder
	sc := bufio.NewScanner(f)
	for n := 0; n < maxLockLines && sc.Scan(); n++ {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[1] != "FLOCK" || fields[5] != want {
			continue
		}
		pid, err := strconv.Atoi(fields[4])
		if err != nil || pid <= 0 {
			continue
		}
		out = append(out, LockHolder{Pid: pid, Stopped: stopped(pid)})
	}
	return out, sc.Err()
}

// stopped reports whether process pid is stopped: the state in
// /proc/PID/stat, the field after the command name's closing parenthesis,
// is T (stopped by a signal) or t (stopped by a tracer).
func stopped(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 || i+2 >= len(data) {
		return false
	}
	return data[i+2] == 'T' || data[i+2] == 't'
}
