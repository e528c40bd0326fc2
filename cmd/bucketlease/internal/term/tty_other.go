//go:build !linux

package term

import "os"

// IsTerminal reports whether f is a terminal: here, a character device.
func IsTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
