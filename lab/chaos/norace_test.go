//go:build linux && !race

package chaos_test

const raceEnabled = false
