//go:build race

package simulation

// replaySeeds is how many seeds TestReplayExact runs twice. Under the race
// detector, which makes a seed about ten times slower, a few: scripts/test
// runs the full count in its non-race step.
const replaySeeds = 100
