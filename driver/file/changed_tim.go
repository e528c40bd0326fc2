//go:build linux || openbsd || dragonfly || solaris

package file

import (
	"io/fs"
	"syscall"
	"time"
)

// changeTime returns the file's status change time (st_ctim), and false
// where the FileInfo does not carry it.
func changeTime(st fs.FileInfo) (time.Time, bool) {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return time.Time{}, false
	}
	return time.Unix(sys.Ctim.Unix()), true
}
