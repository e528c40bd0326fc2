//go:build !unix

package bench

import "time"

// cpuTime is zero where getrusage(2) is missing: HoldMany then reports
// no CPU time per renewal rather than a made-up one.
func cpuTime() time.Duration { return 0 }
