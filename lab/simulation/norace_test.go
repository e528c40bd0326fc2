//go:build !race

package simulation

const (
	// replaySeeds is how many seeds TestReplayExact runs twice.
	replaySeeds = 2000
	// classSeedsDefault is how many seeds TestRound3ClassesHold runs per
	// class.
	classSeedsDefault = 100
	// fixedSeedsCap: TestFixedDefects runs every seed of each class (0: no
	// cap).
	fixedSeedsCap = 0
)
