//go:build unix

package file

import (
	"context"
	"errors"
	"io"
	"os"
	"testing"

	"github.com/mushroomdb/bucketlease/driver"
)

// TestCrashBetweenRecordAndRename stops a write at the one point where the
// bytes and the version are in two files: the key's record names the new
// file and its version, and the rename has not happened (a cancelled
// context stops install just before the rename, as a crash would). The old
// file must still read with its old version, which a holder's IfMatch still
// names, never with a version nobody holds; and once the rename is done the
// new file reads with the new version.
func TestCrashBetweenRecordAndRename(t *testing.T) {
	for _, over := range []string{"driver", "legacy", "copied-in"} {
		t.Run(over, func(t *testing.T) {
			b, err := Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			const key = "LEASE"
			p := b.root + "/" + key
			var v1 driver.Version
			switch over {
			case "driver":
				a, err := b.Put(ctx, key, []byte("old"), driver.PutOptions{If: driver.IfAbsent()})
				if err != nil {
					t.Fatal(err)
				}
				v1 = a.Version
			case "legacy":
				v1 = "0123456789abcdef0123456789abcdef"
				if err := os.WriteFile(p, []byte(legacyMagic+string(v1)+"\nold"), 0o644); err != nil {
					t.Fatal(err)
				}
			case "copied-in":
				if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
					t.Fatal(err)
				}
				_, v1 = get(t, b, key)
			}
			s, err := b.stage(ctx, key, nil, func(f *os.File) error { _, err := f.WriteString("new"); return err })
			if err != nil {
				t.Fatal(err)
			}
			_, keep, err := b.current(key, p)
			if err != nil {
				t.Fatal(err)
			}
			crashed, cancel := context.WithCancel(ctx)
			cancel()
			v2 := newVersion()
			if err := b.commit(crashed, key, s, p, v2, keep); !errors.Is(err, context.Canceled) {
				t.Fatalf("commit with a cancelled context: %v, want it stopped before the rename", err)
			}
			if data, v := get(t, b, key); data != "old" || v != v1 {
				t.Fatalf("after a crash between the record and the rename: %q at %q, want %q at its old version %q", data, v, "old", v1)
			}
			// The rename, as if the crash had come just after it.
			if err := b.install(ctx, s.name, p); err != nil {
				t.Fatal(err)
			}
			s.done()
			if data, v := get(t, b, key); data != "new" || v != v2 {
				t.Fatalf("after the rename: %q at %q, want %q at %q", data, v, "new", v2)
			}
			if _, err := b.Put(ctx, key, []byte("x"), driver.PutOptions{If: driver.IfMatch(v1)}); !errors.Is(err, driver.ErrPrecondition) {
				t.Fatalf("IfMatch of the old version over the new bytes: %v, want ErrPrecondition", err)
			}
		})
	}
}

func get(t *testing.T, b *Bucket, key string) (string, driver.Version) {
	t.Helper()
	rc, v, err := b.Get(context.Background(), key, driver.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return string(data), v.Version
}
