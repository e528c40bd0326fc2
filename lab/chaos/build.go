//go:build linux

package chaos

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
)

// Building the chaos binaries.

// BuildWorker builds cmd/chaosworker into dir with go build (with the race
// detector if race) and returns the binary's path. root is the module's
// directory.
func BuildWorker(ctx context.Context, root, dir string, race bool) (string, error) {
	bin := filepath.Join(dir, "chaosworker")
	cmd := exec.CommandContext(ctx, "go", buildArgs(bin, "./lab/chaos/cmd/chaosworker", race)...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build chaosworker: %v\n%s", err, out)
	}
	return bin, nil
}

// BuildCLI builds cmd/bucketlease into dir (with the race detector if race)
// and returns the binary's path.
func BuildCLI(ctx context.Context, root, dir string, race bool) (string, error) {
	bin := filepath.Join(dir, "bucketlease")
	cmd := exec.CommandContext(ctx, "go", buildArgs(bin, "./cmd/bucketlease", race)...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build bucketlease: %v\n%s", err, out)
	}
	return bin, nil
}

func buildArgs(bin, pkg string, race bool) []string {
	args := []string{"build", "-o", bin}
	if race {
		args = append(args, "-race")
	}
	return append(args, pkg)
}
