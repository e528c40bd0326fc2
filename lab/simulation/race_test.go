//go:build race

package simulation

// Under the race detector, which makes a seed about ten times slower, the
// seed counts are smaller: scripts/test runs TestReplayExact at full size
// in its non-race step.
const (
	// replaySeeds is how many seeds TestReplayExact runs twice.
	replaySeeds = 50
	// classSeedsDefault is how many seeds TestRound3ClassesHold runs per
	// class.
	classSeedsDefault = 30
	// fixedSeedsCap: TestFixedDefects runs at most this many seeds of a
	// class (or up to the seed its defect was found on, if later).
	fixedSeedsCap = 30
)
