package cli

import (
	"archive/zip"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// installVersion is the version the module is published at in the test's
// own module proxy.
//
// It is new for every run: the module cache keeps what it extracted under a
// version, and a fixed one would install the files of an earlier run
// (TestGoInstallShowsTheVersion then failed once the tree had a file the
// cached copy lacked). The test removes its copy from the cache afterwards.
var installVersion = fmt.Sprintf("v1.2.3-installtest.%d", time.Now().UnixNano())

// TestGoInstallShowsTheVersion publishes this tree, as a module zip, at
// installVersion in a module proxy on disk, runs the README's install lines
// (`go get …@latest` in a fresh module, `go install …/cmd/bucketlease@latest`)
// against it as a user would, and runs `bucketlease version`: the version
// must be the one installed, and the one the user's module requires.
func TestGoInstallShowsTheVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command from a module proxy: not in -short")
	}
	gocmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("git", "-C", root, "ls-files").Output()
	if err != nil {
		t.Skipf("git ls-files (needed to know the module's files): %v", err)
	}
	const mod = "github.com/mushroomdb/bucketlease"
	proxy := t.TempDir()
	dir := filepath.Join(proxy, filepath.FromSlash(mod), "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("list", []byte(installVersion+"\n"))
	write(installVersion+".info", []byte(`{"Version":"`+installVersion+`","Time":"2026-12-01T00:00:00Z"}`))
	write(installVersion+".mod", gomod)

	// The module zip: every tracked file under mod@version/, except those
	// of nested modules (a directory with its own go.mod).
	var nested []string
	files := strings.Fields(string(out))
	for _, f := range files {
		if strings.HasSuffix(f, "/go.mod") {
			nested = append(nested, strings.TrimSuffix(f, "go.mod"))
		}
	}
	zf, err := os.Create(filepath.Join(dir, installVersion+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(zf)
files:
	for _, f := range files {
		for _, n := range nested {
			if strings.HasPrefix(f, n) {
				continue files
			}
		}
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			continue // tracked but deleted in the work tree
		}
		w, err := zw.Create(mod + "@" + installVersion + "/" + f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zf.Close(); err != nil {
		t.Fatal(err)
	}

	bin := t.TempDir()
	if cache, err := exec.Command(gocmd, "env", "GOMODCACHE").Output(); err == nil && strings.TrimSpace(string(cache)) != "" {
		c := strings.TrimSpace(string(cache))
		t.Cleanup(func() {
			os.RemoveAll(filepath.Join(c, filepath.FromSlash(mod)+"@"+installVersion))
			for _, ext := range []string{".info", ".mod", ".zip", ".ziphash", ".lock"} {
				os.Remove(filepath.Join(c, "cache", "download", filepath.FromSlash(mod), "@v", installVersion+ext))
			}
		})
	}
	// The README's install lines, exactly as written, in a fresh module of
	// the user's: @latest is installVersion, the proxy's only version.
	lines := readmeInstallLines(t)
	want := "go get " + mod + "@latest\ngo install " + mod + "/cmd/bucketlease@latest"
	if strings.Join(lines, "\n") != want {
		t.Fatalf("the README's install block runs\n%s\nwant\n%s\n(keep this test in step)", strings.Join(lines, "\n"), want)
	}
	user := t.TempDir() // outside this module
	env := append(os.Environ(), "GOBIN="+bin, "GOPROXY=file://"+filepath.ToSlash(proxy), "GOSUMDB=off",
		"GOFLAGS=-modcacherw", "GOTOOLCHAIN=local", "GOWORK=off")
	for _, line := range append([]string{"go mod init example.com/user"}, lines...) {
		cmd := exec.Command("sh", "-c", line)
		cmd.Dir, cmd.Env = user, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s (the proxy has %s@%s): %v\n%s", line, mod, installVersion, err, out)
		}
	}
	list := exec.Command(gocmd, "list", "-m", mod)
	list.Dir, list.Env = user, env
	if out, err := list.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != mod+" "+installVersion {
		t.Fatalf("after the README's go get, go list -m %s printed %q (%v), want version %s", mod, out, err, installVersion)
	}
	got, err := exec.Command(filepath.Join(bin, "bucketlease"), "version").CombinedOutput()
	if err != nil {
		t.Fatalf("bucketlease version: %v\n%s", err, got)
	}
	if !strings.Contains(string(got), installVersion) {
		t.Fatalf("bucketlease version after go install @%s printed:\n%s", installVersion, got)
	}
}

// readmeInstallLines returns the commands of the README's block under
// "## Install", without their comments.
func readmeInstallLines(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Install\n")
	_, block, ok2 := strings.Cut(section, "```sh\n")
	block, _, ok3 := strings.Cut(block, "```\n")
	if !ok || !ok2 || !ok3 {
		t.Fatal(`the README has no ` + "```sh" + ` block under "## Install"`)
	}
	var lines []string
	for _, line := range strings.Split(block, "\n") {
		line, _, _ = strings.Cut(line, "#")
		if line = strings.TrimSpace(line); line != "" {
			lines = append(lines, line)
		}
	}
	return lines
}
