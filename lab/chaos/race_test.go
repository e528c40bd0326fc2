//go:build linux && race

package chaos_test

// raceEnabled: the test binary was built with -race, so the worker
// processes are too.
const raceEnabled = true
