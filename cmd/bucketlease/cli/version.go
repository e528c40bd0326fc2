package cli

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/exitcode"
)

var versionCommand = &command{
	name:    "version",
	args:    "",
	summary: "print the module version and VCS revision this binary was built from",
	help: `Prints the version of the module this binary was built from, as the Go
toolchain recorded it: the tag for a binary installed with
"go install github.com/mushroomdb/bucketlease/cmd/bucketlease@v1.2.3"; for a
build from a checkout, a pseudo-version naming the commit, or "(devel)" when
the build recorded no VCS information. Then the VCS revision, its time and
whether the tree had uncommitted changes, when the build recorded them.
A binary built by another module's main package (a driver of its own, run
through cli.Main) names that module, and then the version of bucketlease
it was built with. "bucketlease --version" does the same.

Examples:
  bucketlease version
  bucketlease --version`,
	setup: func(fs *flag.FlagSet) runFunc {
		return func(ctx context.Context, e *env, args []string) error {
			pos, after, err := parseArgs(fs, args)
			if err != nil {
				return err
			}
			if len(pos) > 0 || len(after) > 0 {
				return exitcode.Usagef("version takes no arguments")
			}
			fmt.Fprintln(e.stdout, versionText())
			return nil
		}
	},
}

// versionText is one line: the module version, and what the build info
// says of the VCS revision.
func versionText() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "bucketlease (no build information; " + runtime.Version() + ")"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	parts := []string{"module " + bi.Main.Path}
	if d := libraryDep(bi); d != "" {
		// A command of another module, with a driver of its own.
		parts = append(parts, d)
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if r := settings["vcs.revision"]; r != "" {
		parts = append(parts, "revision "+r)
	}
	if t := settings["vcs.time"]; t != "" {
		parts = append(parts, t)
	}
	if settings["vcs.modified"] == "true" {
		parts = append(parts, "with uncommitted changes")
	}
	parts = append(parts, bi.GoVersion)
	return fmt.Sprintf("bucketlease %s (%s)", v, strings.Join(parts, ", "))
}

// modulePath is this module's path.
const modulePath = "github.com/mushroomdb/bucketlease"

// libraryDep says which version of this module a binary whose main module
// is another one (a command built with cli.Main and a driver of its own)
// was built with, and where a replace took it from; "" when the main module
// is this one.
func libraryDep(bi *debug.BuildInfo) string {
	if bi.Main.Path == modulePath {
		return ""
	}
	for _, d := range bi.Deps {
		if d.Path != modulePath {
			continue
		}
		s := "with " + d.Path + " " + d.Version
		if r := d.Replace; r != nil {
			s += " => " + strings.TrimSpace(r.Path+" "+r.Version)
		}
		return s
	}
	return ""
}
