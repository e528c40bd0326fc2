//go:build unix

package file_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/file"
	"github.com/mushroomdb/bucketlease/internal/location"
)

const helperEnv = "BUCKETLEASE_FILE_HELPER_DIR"

// TestHelperProcess is not a test: TestAcrossProcesses runs the test binary
// again with helperEnv set, and this function does one process's share of
// the work there.
func TestHelperProcess(t *testing.T) {
	dir := os.Getenv(helperEnv)
	if dir == "" {
		t.Skip("helper process for TestAcrossProcesses")
	}
	ctx := context.Background()
	b, err := file.Open(dir)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(2)
	}
	// One racer for the contested key.
	if _, err := b.Put(ctx, "contested", []byte(strconv.Itoa(os.Getpid())), driver.PutOptions{If: driver.IfAbsent()}); err == nil {
		fmt.Println("won")
	} else if !errors.Is(err, driver.ErrPrecondition) {
		fmt.Println("error:", err)
		os.Exit(2)
	}
	for done := 0; done < 25; {
		rc, v, err := b.Get(ctx, "counter", driver.GetOptions{})
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(2)
		}
		data, _ := io.ReadAll(rc)
		rc.Close()
		n, _ := strconv.Atoi(string(data))
		_, err = b.Put(ctx, "counter", []byte(strconv.Itoa(n+1)), driver.PutOptions{If: driver.IfMatch(v.Version)})
		switch {
		case err == nil:
			done++
		case !errors.Is(err, driver.ErrPrecondition):
			fmt.Println("error:", err)
			os.Exit(2)
		}
	}
	os.Exit(0)
}

// TestAcrossProcesses runs four OS processes against one directory: one
// IfAbsent winner among them, and no compare-and-swap increment lost.
func TestAcrossProcesses(t *testing.T) {
	dir := t.TempDir()
	b, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := b.Put(ctx, "counter", []byte("0"), driver.PutOptions{If: driver.IfAbsent()}); err != nil {
		t.Fatal(err)
	}
	const procs = 4
	outs := make([]*bytes.Buffer, procs)
	cmds := make([]*exec.Cmd, procs)
	for i := range procs {
		cmds[i] = exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
		cmds[i].Env = append(os.Environ(), helperEnv+"="+dir)
		outs[i] = new(bytes.Buffer)
		cmds[i].Stdout = outs[i]
		cmds[i].Stderr = outs[i]
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	winners := 0
	for i, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("helper %d: %v\n%s", i, err, outs[i])
		}
		winners += strings.Count(outs[i].String(), "won")
	}
	if winners != 1 {
		t.Errorf("%d processes won the IfAbsent race; exactly one should", winners)
	}
	rc, _, err := b.Get(ctx, "counter", driver.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(rc)
	rc.Close()
	if string(data) != strconv.Itoa(procs*25) {
		t.Errorf("counter is %s after %d increments: updates were lost", data, procs*25)
	}
}

func TestVersionChangesOnIdenticalWrite(t *testing.T) {
	b, err := file.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	v1, err := b.Put(ctx, "k", []byte("same"), driver.PutOptions{If: driver.IfAbsent()})
	if err != nil {
		t.Fatal(err)
	}
	v2, err := b.Put(ctx, "k", []byte("same"), driver.PutOptions{If: driver.IfMatch(v1.Version)})
	if err != nil {
		t.Fatal(err)
	}
	if v1.Version == v2.Version {
		t.Fatalf("two writes of the same bytes share version %q", v1.Version)
	}
	if _, err := b.Put(ctx, "k", []byte("same"), driver.PutOptions{If: driver.IfMatch(v1.Version)}); !errors.Is(err, driver.ErrPrecondition) {
		t.Fatalf("IfMatch with the first version after an identical rewrite: %v, want ErrPrecondition", err)
	}
}

// TestTornWriteLeavesOldObject simulates a crash mid-write: a temporary file
// abandoned half-written must not change what readers see.
func TestTornWriteLeavesOldObject(t *testing.T) {
	dir := t.TempDir()
	b, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	v, err := b.Put(ctx, "k", []byte("complete"), driver.PutOptions{If: driver.IfAbsent()})
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, ".bucketlease", "tmp", "put-crashed")
	if err := os.WriteFile(tmp, []byte("bucketlease-object v1 0123"), 0o644); err != nil {
		t.Fatal(err)
	}
	rc, gv, err := b.Get(ctx, "k", driver.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(rc)
	rc.Close()
	if string(data) != "complete" || gv.Version != v.Version {
		t.Fatalf("after an abandoned write: %q at %q, want %q at %q", data, gv.Version, "complete", v.Version)
	}
}

func TestHandWrittenFileIsReadable(t *testing.T) {
	dir := t.TempDir()
	b, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "LEASE"), []byte("{garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rc, v, err := b.Get(ctx, "LEASE", driver.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(rc)
	rc.Close()
	if string(data) != "{garbage" || v.Version == "" {
		t.Fatalf("hand-written file read as %q at %q", data, v.Version)
	}
	if _, err := b.Put(ctx, "LEASE", []byte("{}"), driver.PutOptions{If: driver.IfMatch(v.Version)}); err != nil {
		t.Fatalf("IfMatch with the derived version of a hand-written file: %v", err)
	}
}

func TestKeysCannotEscape(t *testing.T) {
	b, err := file.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"../x", "a/../../x", "/etc/passwd", ".bucketlease/locks/x", "a//b", ""} {
		if _, err := b.Put(context.Background(), k, []byte("x"), driver.PutOptions{}); err == nil {
			t.Errorf("Put accepted key %q", k)
		}
	}
}

func TestOpenURL(t *testing.T) {
	dir := t.TempDir()
	b, prefix, err := location.Open(context.Background(), "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	if prefix != "" || b == nil {
		t.Fatalf("prefix %q", prefix)
	}
	for _, bad := range []string{"file://relative/dir", "file:///" + dir + "?mode=fast", "file://user:pass@localhost" + dir,
		"file://" + dir + "?trust_network_flock=maybe"} {
		if _, _, err := location.Open(context.Background(), bad); err == nil {
			t.Errorf("Open(%q) succeeded", bad)
		}
	}
}

// TestKeyThatIsAPrefixOfAnother: "db1" while "db1/LEASE"
// exists reads as missing (not "is a directory"), is refused with
// ErrInvalidKey naming the key in the way, and can be written once the
// longer key is deleted; the reverse order likewise.
func TestKeyThatIsAPrefixOfAnother(t *testing.T) {
	ctx := context.Background()
	b, err := file.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(ctx, "db1/LEASE", []byte("lease"), driver.PutOptions{If: driver.IfAbsent()}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Get(ctx, "db1", driver.GetOptions{}); !errors.Is(err, driver.ErrNotExist) {
		t.Fatalf("Get db1 while db1/LEASE exists: %v, want ErrNotExist", err)
	}
	if err := b.Delete(ctx, "db1", driver.Condition{}); err != nil {
		t.Fatalf("Delete of the missing db1: %v", err)
	}
	_, err = b.Put(ctx, "db1", []byte("x"), driver.PutOptions{If: driver.IfAbsent()})
	if !errors.Is(err, driver.ErrInvalidKey) || !strings.Contains(err.Error(), "prefix of stored keys") {
		t.Fatalf("Put db1 while db1/LEASE exists: %v, want ErrInvalidKey saying why", err)
	}
	if err := b.Delete(ctx, "db1/LEASE", driver.Condition{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(ctx, "db1", []byte("x"), driver.PutOptions{If: driver.IfAbsent()}); err != nil {
		t.Fatalf("Put db1 once db1/LEASE is deleted: %v", err)
	}
	_, err = b.Put(ctx, "db1/LEASE", []byte("x"), driver.PutOptions{If: driver.IfAbsent()})
	if !errors.Is(err, driver.ErrInvalidKey) || !strings.Contains(err.Error(), `lies under key "db1"`) {
		t.Fatalf("Put db1/LEASE while db1 exists: %v, want ErrInvalidKey naming db1", err)
	}
	if _, _, err := b.Get(ctx, "db1/LEASE", driver.GetOptions{}); !errors.Is(err, driver.ErrNotExist) {
		t.Fatalf("Get db1/LEASE under the object db1: %v, want ErrNotExist", err)
	}
}

// TestMissingDirectory: a bucket whose directory was removed
// reports ErrBucketNotExist, never ErrNotExist, and a write does not
// recreate it.
func TestMissingDirectory(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "bucket")
	b, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Get(ctx, "LEASE", driver.GetOptions{}); !errors.Is(err, driver.ErrBucketNotExist) || errors.Is(err, driver.ErrNotExist) {
		t.Errorf("Get: %v, want ErrBucketNotExist", err)
	}
	if _, err := b.Put(ctx, "LEASE", []byte("x"), driver.PutOptions{If: driver.IfAbsent()}); !errors.Is(err, driver.ErrBucketNotExist) {
		t.Errorf("Put: %v, want ErrBucketNotExist", err)
	}
	if err := b.Delete(ctx, "LEASE", driver.Condition{}); !errors.Is(err, driver.ErrBucketNotExist) {
		t.Errorf("Delete: %v, want ErrBucketNotExist", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the directory was recreated: %v", err)
	}
}

func init() { driver.Register("localdir", driver.Scheme{Open: file.OpenURL, Locate: file.Locate}) }

// TestOpenURLUnderAnotherScheme: the exported OpenURL and Locate serve a
// scheme of the caller's choosing.
func TestOpenURLUnderAnotherScheme(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := location.Open(context.Background(), "localdir://"+dir); err != nil {
		t.Fatal(err)
	}
	a, errA := location.Parse("localdir://" + dir + "/")
	b, errB := location.Parse("file://" + dir)
	if errA != nil || errB != nil || a.Bucket != b.Bucket || a.Prefix != b.Prefix {
		t.Fatalf("localdir and file name %v and %v (%v, %v)", a, b, errA, errB)
	}
}

// TestPermission: a directory the process may not write is
// driver.ErrPermission. Root ignores file modes, so the test needs another
// user.
func TestPermission(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("skipped: running as root, which file modes do not restrict")
	}
	dir := t.TempDir()
	b, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	if _, err := b.Put(context.Background(), "sub/k", []byte("x"), driver.PutOptions{If: driver.IfAbsent()}); !errors.Is(err, driver.ErrPermission) {
		t.Errorf("Put into a read-only directory: %v, want ErrPermission", err)
	}
	if _, err := file.Open(filepath.Join(dir, "new")); !errors.Is(err, driver.ErrPermission) {
		t.Errorf("Open under a read-only directory: %v, want ErrPermission", err)
	}
}

// TestObjectsAreAsReadableAsTheDirectory: LEASE and every object take the
// bucket directory's read and write bits, so that another user allowed to
// read the directory can read the lease.
func TestObjectsAreAsReadableAsTheDirectory(t *testing.T) {
	for _, dirMode := range []os.FileMode{0o755, 0o750, 0o700} {
		dir := filepath.Join(t.TempDir(), "b")
		if err := os.Mkdir(dir, dirMode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, dirMode); err != nil { // past the umask
			t.Fatal(err)
		}
		b, err := file.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Put(t.Context(), "db1/LEASE", []byte("{}"), driver.PutOptions{If: driver.IfAbsent()}); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(filepath.Join(dir, "db1", "LEASE"))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := st.Mode().Perm(), dirMode&0o666; got != want {
			t.Errorf("directory %v: LEASE is %v, want %v", dirMode, got, want)
		}
	}
}

// TestKeyThatIsAStrayDirectory: a key whose file is a directory holding no
// stored key (mkdir LEASE) is a permanent ErrInvalidKey for Get, Put and
// Delete, naming the path and saying to remove or rename it, never
// ErrNotExist; once it is removed the key is missing and can be written.
func TestKeyThatIsAStrayDirectory(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b, err := file.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "db1", "LEASE")
	if err := os.MkdirAll(filepath.Join(p, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	want := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, driver.ErrInvalidKey) || errors.Is(err, driver.ErrNotExist) ||
			!strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "is a directory") || !strings.Contains(err.Error(), "remove or rename") {
			t.Fatalf("%s of a key that is a directory: %v, want ErrInvalidKey naming %s, saying it is a directory to remove or rename", what, err, p)
		}
	}
	_, _, err = b.Get(ctx, "db1/LEASE", driver.GetOptions{})
	want("Get", err)
	_, err = b.Put(ctx, "db1/LEASE", []byte("x"), driver.PutOptions{If: driver.IfAbsent()})
	want("Put IfAbsent", err)
	_, err = b.Put(ctx, "db1/LEASE", []byte("x"), driver.PutOptions{})
	want("Put", err)
	want("Delete", b.Delete(ctx, "db1/LEASE", driver.Condition{}))
	if err := os.RemoveAll(p); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Get(ctx, "db1/LEASE", driver.GetOptions{}); !errors.Is(err, driver.ErrNotExist) {
		t.Fatalf("Get once the directory is removed: %v, want ErrNotExist", err)
	}
	if _, err := b.Put(ctx, "db1/LEASE", []byte("x"), driver.PutOptions{If: driver.IfAbsent()}); err != nil {
		t.Fatalf("Put once the directory is removed: %v", err)
	}
}

// TestMetadataOnlyWhenAsked: a Get returns the metadata a Put stored with
// the object only under GetOptions.Metadata (an empty, non-nil Metadata
// for an object stored with none), and an overwrite replaces it.
func TestMetadataOnlyWhenAsked(t *testing.T) {
	b, err := file.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if why := b.MetadataUnsupported(); why != nil {
		t.Skipf("the file system keeps no user extended attributes: %v", why)
	}
	ctx := t.Context()
	pa, err := b.Put(ctx, "k", []byte("x"), driver.PutOptions{If: driver.IfAbsent(), Metadata: driver.Metadata{"epoch": "7"}})
	if err != nil {
		t.Fatal(err)
	}
	read := func(opts driver.GetOptions) driver.Attrs {
		t.Helper()
		rc, a, err := b.Get(ctx, "k", opts)
		if err != nil {
			t.Fatal(err)
		}
		rc.Close()
		return a
	}
	if a := read(driver.GetOptions{}); a.Metadata != nil || a.Version != pa.Version {
		t.Errorf("a Get without GetOptions.Metadata: %+v, want the version %s and no metadata", a, pa.Version)
	}
	if a := read(driver.GetOptions{Metadata: true}); a.Metadata["epoch"] != "7" || len(a.Metadata) != 1 {
		t.Errorf("a Get under GetOptions.Metadata: metadata %s, want epoch=7", a.Metadata)
	}
	if _, err := b.Put(ctx, "k", []byte("y"), driver.PutOptions{If: driver.IfMatch(pa.Version)}); err != nil {
		t.Fatal(err)
	}
	if a := read(driver.GetOptions{Metadata: true}); a.Metadata == nil || len(a.Metadata) != 0 {
		t.Errorf("after an overwrite with none: metadata %#v, want an empty map", a.Metadata)
	}
}
