//go:build linux

package cli

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestPutProgressAtTerminal: with stderr a terminal, put shows the bytes
// so far and the rate while the body comes in (here from a fifo the test
// holds open, so the upload lasts until the test says), then one last
// line with the total; TestPutOneShotWait checks that a stderr that is no
// terminal gets nothing.
func TestPutProgressAtTerminal(t *testing.T) {
	u, _ := fileURL(t)
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	tm := newTerminal(t)
	tm.send(binary + " put " + u + " p/1 " + fifo + "; echo exit=$?\n")
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	body := make([]byte, 1<<20)
	rand.Read(body)
	if _, err := w.Write(body); err != nil {
		t.Fatal(err)
	}
	tm.waitFor(`put p/1: 1\.0 MiB, [0-9.]+ [KMG]?i?B/s`)
	w.Close()
	tm.waitFor(`put p/1: 1\.0 MiB in [0-9.]+m?s`)
	tm.waitFor(`exit=0`)
}
