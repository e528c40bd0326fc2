//go:build linux && bucketlease_oldlease

package chaos

import "github.com/mushroomdb/bucketlease/internal/oldlease"

// applyControls turns on the old behaviours a negative control asks for.
func applyControls(cfg WorkerConfig) error {
	oldlease.DeleteOnRelease.Store(cfg.OldRelease)
	// The old acquire whole: no probe, and If-None-Match: * on the lease
	// object before anything was read (reading first alone keeps a
	// stripping path from overwriting a fresh holder, save for races).
	oldlease.SkipProbe.Store(cfg.SkipProbe)
	oldlease.UnprovenFirstWrite.Store(cfg.SkipProbe)
	oldlease.AdoptByInstanceID.Store(cfg.OldAdopt)
	return nil
}
