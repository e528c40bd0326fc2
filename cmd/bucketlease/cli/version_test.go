package cli

import (
	"runtime/debug"
	"testing"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/exitcode"
)

// TestLibraryDep: a binary of another module (a driver's command built
// with Main) names the bucketlease it was built with, and where a replace
// took it from; this module's own binary names nothing more.
func TestLibraryDep(t *testing.T) {
	dep := &debug.Module{Path: modulePath, Version: "v1.2.3"}
	for _, tc := range []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{"this module", debug.BuildInfo{Main: debug.Module{Path: modulePath}}, ""},
		{"another module", debug.BuildInfo{Main: debug.Module{Path: "example.com/x"}, Deps: []*debug.Module{{Path: "example.com/y", Version: "v9.0.0"}, dep}},
			"with github.com/mushroomdb/bucketlease v1.2.3"},
		{"a replace", debug.BuildInfo{Main: debug.Module{Path: "example.com/x"},
			Deps: []*debug.Module{{Path: modulePath, Version: "v0.0.0", Replace: &debug.Module{Path: "../.."}}}},
			"with github.com/mushroomdb/bucketlease v0.0.0 => ../.."},
	} {
		if got := libraryDep(&tc.bi); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestMainWithoutArguments: Main given no arguments at all (not even the
// program's name) prints the help and exits 2, as with the name alone.
func TestMainWithoutArguments(t *testing.T) {
	for _, args := range [][]string{nil, {"bucketlease"}} {
		if code := Main(args); code != exitcode.Usage {
			t.Errorf("Main(%q) = %d, want %d", args, code, exitcode.Usage)
		}
	}
}
