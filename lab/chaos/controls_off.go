//go:build linux && !bucketlease_oldlease

package chaos

import "errors"

// applyControls refuses a negative control: this build has none of the
// old behaviours (they exist only under the bucketlease_oldlease tag).
func applyControls(cfg WorkerConfig) error {
	if cfg.OldRelease || cfg.SkipProbe || cfg.OldAdopt {
		return errors.New("chaos worker: a negative control needs a build with -tags bucketlease_oldlease")
	}
	return nil
}
