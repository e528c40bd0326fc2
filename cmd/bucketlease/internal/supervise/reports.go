//go:build unix

package supervise

import (
	"bufio"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// InheritedFiles lists the descriptors this process received without
// close-on-exec, for the watchdog and command to get at the same numbers.
func InheritedFiles() []*os.File {
	files := []*os.File{os.Stdin, os.Stdout, os.Stderr}
	last := 2
	var more []*os.File
	for fd := 3; fd < 256; fd++ {
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err != nil || flags&unix.FD_CLOEXEC != 0 {
			more = append(more, nil)
			continue
		}
		f := os.NewFile(uintptr(fd), "inherited")
		keepInherited = append(keepInherited, f) // never closed by a finalizer
		more = append(more, f)
		last = fd
	}
	return append(files, more[:last-2]...)
}

// keepInherited keeps the files made for inherited descriptors reachable,
// so that no finalizer closes a descriptor this process does not own.
var keepInherited []*os.File

// ReadReports passes on the watchdog's reports read from r, and closes the
// channel when r ends: the watchdog has exited or died.
func ReadReports(r io.Reader) <-chan Report {
	reports := make(chan Report, 16)
	go func() {
		defer close(reports)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			if r, ok := parseReport(sc.Text()); ok {
				reports <- r
			}
		}
	}()
	return reports
}

// A Report is one line from the watchdog and when it was written.
type Report struct {
	At     time.Time
	Fields []string
}

// parseReport parses "@NS KIND [ARG [REST]]".
func parseReport(line string) (Report, bool) {
	ts, rest, ok := strings.Cut(line, " ")
	if !ok || !strings.HasPrefix(ts, "@") {
		return Report{}, false
	}
	ns, err := strconv.ParseInt(ts[1:], 10, 64)
	if err != nil {
		return Report{}, false
	}
	return Report{At: time.Unix(0, ns), Fields: strings.SplitN(rest, " ", 3)}, true
}

// MonoNow reads CLOCK_MONOTONIC, which every process on the machine shares.
func MonoNow() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic("clock_gettime(CLOCK_MONOTONIC): " + err.Error())
	}
	return ts.Nano()
}

// oneLine joins s's lines and spaces into one line of single spaces.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Exit codes of the watchdog process.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)
