//go:build bucketlease_oldlease

package chaos

import "github.com/mushroomdb/bucketlease/internal/oldlease"

// applyControls turns on the old behaviours a negative control asks for.
func applyControls(cfg WorkerConfig) error {
	oldlease.DeleteOnRelease.Store(cfg.OldRelease)
	oldlease.SkipProbe.Store(cfg.SkipProbe)
	oldlease.AdoptByInstanceID.Store(cfg.OldAdopt)
	return nil
}
