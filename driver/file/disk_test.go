//go:build unix

package file_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/file"
)

// TestLockFilesAndOpened: a directory no bucket was opened in has no lock
// files and reads as not opened; one written to has one lock file per key.
func TestLockFilesAndOpened(t *testing.T) {
	dir := t.TempDir()
	if lockDir, n := file.LockFiles(dir); n != 0 || lockDir != filepath.Join(dir, ".bucketlease", "locks") {
		t.Errorf("LockFiles of an empty directory = %q, %d", lockDir, n)
	}
	if file.Opened(dir) {
		t.Error("Opened of an empty directory = true")
	}
	b, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !file.Opened(dir) {
		t.Error("Opened after Open = false")
	}
	for _, k := range []string{"a", "b/c", "d"} {
		if _, err := b.Put(context.Background(), k, []byte(k), driver.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, n := file.LockFiles(dir); n != 3 {
		t.Errorf("LockFiles after writing 3 keys: %d lock files", n)
	}
	if b, err := os.ReadFile(file.Path(dir, "b/c")); err != nil || string(b) != "b/c" {
		t.Errorf("the file at Path(dir, \"b/c\") holds %q, %v", b, err)
	}
}
