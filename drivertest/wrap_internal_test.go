package drivertest

import (
	"testing"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/file"
	"github.com/mushroomdb/bucketlease/driver/mem"
	"github.com/mushroomdb/bucketlease/driver/multipart"
	"github.com/mushroomdb/bucketlease/internal/location"
)

// closeCounter is mem with a Close that counts its calls.
type closeCounter struct {
	*mem.Bucket
	closed int
}

func (c *closeCounter) Close() error { c.closed++; return nil }

// TestRecorderKeepsAbilities: the checks see the driver through the
// recorder, which is a multipart.PendingLister exactly where the driver is
// one (so that a check of pending uploads is not applicable rather than
// run on nothing), and whose Close closes the driver.
func TestRecorderKeepsAbilities(t *testing.T) {
	fb, err := file.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := driver.Bucket(fb).(multipart.PendingLister); !ok {
		t.Fatal("setup: the file driver is no PendingLister")
	}
	cc := &closeCounter{Bucket: mem.New()}
	for _, tc := range []struct {
		name    string
		b       driver.Bucket
		pending bool
	}{{"mem", mem.New(), false}, {"file", fb, true}, {"closer", cc, false}} {
		b, _ := recorded(tc.b)
		if _, ok := b.(multipart.PendingLister); ok != tc.pending {
			t.Errorf("the recorder of %s is a PendingLister: %t, want %t", tc.name, ok, tc.pending)
		}
		if tc.pending {
			for _, err := range b.(multipart.PendingLister).ListPending(t.Context(), "x/") {
				if err != nil {
					t.Errorf("ListPending through the recorder of %s: %v", tc.name, err)
				}
			}
		}
		if err := location.Close(b); err != nil {
			t.Errorf("Close of the recorder of %s: %v", tc.name, err)
		}
	}
	if cc.closed != 1 {
		t.Errorf("closing the recorder closed the driver %d times, want 1", cc.closed)
	}
}
