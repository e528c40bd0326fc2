//go:build !race

package simulation

// replaySeeds is how many seeds TestReplayExact runs twice.
const replaySeeds = 2000
