//go:build unix

package file

import (
	"fmt"
	"os"
	"time"
)

// fallbackResolution is the Resolution stated where Open cannot measure
// it: FAT's two seconds, the coarsest; stating less than the file system
// keeps would let a record read older than it is.
const fallbackResolution = 2 * time.Second

// clockLag bounds how far behind time.Now the clock that stamps
// modification times may be: Linux stamps them from its coarse clock,
// which is up to one tick behind (1 to 10 ms, for HZ from 1000 down to
// 100), whatever the file system's granularity.
const clockLag = 10 * time.Millisecond

// stampProbes are the times measureResolution asks the file system to
// keep: just before an odd second ends, so truncating to any granularity
// loses almost all of it, and two that show rounding.
var stampProbes = []time.Time{
	time.Unix(1_700_000_001, 999_999_999),
	time.Unix(1_700_000_002, 1),
	time.Unix(1_700_000_003, 500_000_001),
}

// measureResolution returns how much earlier than the true time a
// modification time stamped through stamp may read (the largest loss,
// plus clockLag), failing where a time comes back more than
// fallbackResolution away.
func measureResolution(stamp func(time.Time) (time.Time, error)) (time.Duration, error) {
	var worst time.Duration
	for _, t := range stampProbes {
		kept, err := stamp(t)
		if err != nil {
			return 0, err
		}
		d := t.Sub(kept).Abs()
		if d > fallbackResolution {
			return 0, fmt.Errorf("the modification time %v was kept as %v", t, kept)
		}
		worst = max(worst, d)
	}
	return min(worst+clockLag, fallbackResolution), nil
}

// probeResolution measures the modification times of the file system
// holding dir (measureResolution), on a new file in dir that it removes.
func probeResolution(dir string) (time.Duration, error) {
	f, err := os.CreateTemp(dir, "mtime-probe-*")
	if err != nil {
		return 0, err
	}
	name := f.Name()
	defer os.Remove(name)
	if err := f.Close(); err != nil {
		return 0, err
	}
	return measureResolution(func(t time.Time) (time.Time, error) {
		if err := os.Chtimes(name, t, t); err != nil {
			return time.Time{}, err
		}
		st, err := os.Stat(name)
		if err != nil {
			return time.Time{}, err
		}
		return st.ModTime(), nil
	})
}
