package s3proto

import "time"

// ShortenSweepPatience makes the sweep give up on a failing listing after
// about d, for the test's duration.
func ShortenSweepPatience(d time.Duration) (restore func()) {
	old := sweepPatience
	sweepPatience = d
	return func() { sweepPatience = old }
}
