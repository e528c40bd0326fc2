package s3proto

import "time"

// ShortenSweepPatience makes the sweep give up on a failing listing after
// about d, for the test's duration.
func ShortenSweepPatience(d time.Duration) (restore func()) {
	old := sweepPatience
	sweepPatience = d
	return func() { sweepPatience = old }
}

// ShortenSweepLate makes the sweep look for late uploads for about d
// after an unanswered creation, for the test's duration.
func ShortenSweepLate(d time.Duration) (restore func()) {
	old := sweepLate
	sweepLate = d
	return func() { sweepLate = old }
}
