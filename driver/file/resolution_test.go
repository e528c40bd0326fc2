//go:build unix

package file

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
)

// TestMeasureResolution: the resolution measured from a file system's
// stamps is its granularity (whether it truncates or rounds) plus the
// clock's lag, and a file system that cannot keep a time, or keeps one
// further off than any granularity explains, is not measured.
func TestMeasureResolution(t *testing.T) {
	for _, tc := range []struct {
		name string
		keep func(time.Time) time.Time
		want time.Duration
	}{
		{"nanoseconds", func(t time.Time) time.Time { return t }, clockLag},
		{"100 ns (NTFS)", func(t time.Time) time.Time { return t.Truncate(100) }, 99 + clockLag},
		{"10 ms (exFAT's create time)", func(t time.Time) time.Time { return t.Truncate(10 * time.Millisecond) }, 10*time.Millisecond - 1 + clockLag},
		{"seconds (ext3, HFS+)", func(t time.Time) time.Time { return t.Truncate(time.Second) }, time.Second - 1 + clockLag},
		{"two seconds (FAT)", func(t time.Time) time.Time { return t.Truncate(2 * time.Second) }, fallbackResolution},
		{"rounded to seconds", func(t time.Time) time.Time { return t.Round(time.Second) }, time.Second/2 - 1 + clockLag},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := measureResolution(func(t time.Time) (time.Time, error) { return tc.keep(t), nil })
			if err != nil || got != tc.want {
				t.Errorf("measureResolution = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
	refused := errors.New("operation not permitted")
	if got, err := measureResolution(func(time.Time) (time.Time, error) { return time.Time{}, refused }); !errors.Is(err, refused) {
		t.Errorf("a file system that refuses the time: %v, %v; want its error", got, err)
	}
	hourOff := func(t time.Time) (time.Time, error) { return t.Add(-time.Hour), nil }
	if got, err := measureResolution(hourOff); err == nil {
		t.Errorf("a file system that keeps times an hour off: measured %v, want an error", got)
	}
}

// TestResolutionOnThisFileSystem: the resolution Open measures on the
// test's own directory is what the bucket reports, never less than the
// clock's lag nor more than the fallback, and below a second on a file
// system that keeps sub-second stamps; and no object the bucket writes
// reads as dated more than that resolution before its write began.
func TestResolutionOnThisFileSystem(t *testing.T) {
	dir := t.TempDir()
	b, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if b.shared != "" {
		t.Skipf("%s is on a %s file system, whose time the driver does not report", dir, b.shared)
	}
	res := b.resolution
	t.Logf("measured resolution: %v", res)
	if res < clockLag || res > fallbackResolution {
		t.Fatalf("measured %v, want between %v and %v", res, clockLag, fallbackResolution)
	}
	ctx := t.Context()
	fine := false
	for i := range 50 {
		before := time.Now()
		key := "k" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		pa, err := b.Put(ctx, key, []byte("x"), driver.PutOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if pa.Time.Resolution != res {
			t.Fatalf("Put reported the resolution %v, want the measured %v", pa.Time.Resolution, res)
		}
		rc, ga, err := b.Get(ctx, key, driver.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rc.Close()
		if early := before.Sub(ga.Time.Modified); early > res {
			t.Fatalf("the object written at %v is dated %v, %v earlier, more than the resolution %v", before, ga.Time.Modified, early, res)
		}
		st, err := os.Stat(Path(dir, key))
		if err != nil {
			t.Fatal(err)
		}
		if st.ModTime().Nanosecond()%int(time.Millisecond) != 0 {
			fine = true
		}
	}
	if fine && res >= time.Second {
		t.Errorf("the file system stamps finer than a millisecond, but the measured resolution is %v", res)
	}
}
