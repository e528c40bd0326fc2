package drivertest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/file"
	"github.com/mushroomdb/bucketlease/drivertest"
)

// processLocalScheme opens a processLocal bucket on a directory:
// drivertest-process-local:///ABS/DIR.
const processLocalScheme = "drivertest-process-local"

func init() {
	driver.Register(processLocalScheme, driver.Scheme{Open: func(ctx context.Context, u *url.URL) (driver.Bucket, string, error) {
		if _, err := driver.Params(u); err != nil {
			return nil, "", err
		}
		b, err := file.Open(u.Path)
		return processLocal{b}, "", err
	}})
}

// processLocal is a wrong driver that no check run in one process can tell
// from a right one: its objects are the file driver's, in a directory that
// every process can open, but it decides each condition itself, reading
// the key's version and then writing unconditionally, with a mutex of its
// own process held around the two. Between the goroutines of a process
// that is a transaction; between processes it is none, as a driver whose
// service transactions were replaced by a sync.Mutex.
type processLocal struct{ files *file.Bucket }

// processLocalMu is the mutex: one per process.
var processLocalMu sync.Mutex

func (b processLocal) Capabilities() driver.Capabilities { return b.files.Capabilities() }

func (b processLocal) Get(ctx context.Context, key string, opts driver.GetOptions) (io.ReadCloser, driver.Attrs, error) {
	return b.files.Get(ctx, key, opts)
}

func (b processLocal) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	if opts.If == (driver.Condition{}) {
		return b.files.Put(ctx, key, data, opts)
	}
	processLocalMu.Lock()
	defer processLocalMu.Unlock()
	if t, err := b.holds(ctx, key, opts.If); err != nil {
		return driver.Attrs{Time: t}, err
	}
	opts.If = driver.Condition{}
	return b.files.Put(ctx, key, data, opts)
}

// PutStream reads the body whole and writes it with Put (driver.PutWhole),
// so that its condition is decided the same way.
func (b processLocal) PutStream(ctx context.Context, key string, r io.Reader, opts driver.PutOptions, s *driver.StreamOptions) (driver.Attrs, error) {
	return driver.PutWhole(ctx, b, key, r, opts, s)
}

func (b processLocal) List(ctx context.Context, prefix string) iter.Seq2[driver.Object, error] {
	return b.files.List(ctx, prefix)
}

func (b processLocal) Delete(ctx context.Context, key string, cond driver.Condition) error {
	if cond == (driver.Condition{}) {
		return b.files.Delete(ctx, key, cond)
	}
	processLocalMu.Lock()
	defer processLocalMu.Unlock()
	if _, err := b.holds(ctx, key, cond); err != nil {
		return err
	}
	return b.files.Delete(ctx, key, driver.Condition{})
}

// holds returns nil if cond holds for key now, and ErrPrecondition if not,
// with the service time of the read that decided it.
func (b processLocal) holds(ctx context.Context, key string, cond driver.Condition) (driver.ServiceTime, error) {
	rc, a, err := b.files.Get(ctx, key, driver.GetOptions{})
	if err == nil {
		rc.Close()
	}
	v := a.Version
	want, match := cond.Match()
	switch {
	case errors.Is(err, driver.ErrNotExist) && cond == driver.IfAbsent():
		return a.Time, nil
	case err != nil && !errors.Is(err, driver.ErrNotExist):
		return a.Time, err
	case err == nil && match && v == want:
		return a.Time, nil
	}
	return a.Time, fmt.Errorf("process-local: %s %s: %w", cond, key, driver.ErrPrecondition)
}

// processLocalRunEnv, set to 1, makes TestProcessLocalExclusionFails and
// TestURLOfAnotherBucketFails run the suite, in the child process each
// starts.
const processLocalRunEnv = "BUCKETLEASE_DRIVERTEST_PROCESS_LOCAL_RUN"

// TestProcessLocalExclusionFails: a driver whose exclusion holds only
// inside one process passes every check in one process and fails
// exclusion-across-processes, which Run runs here in a child process (its
// failure would otherwise fail this test) whose output is checked.
func TestProcessLocalExclusionFails(t *testing.T) {
	if os.Getenv(processLocalRunEnv) == "1" {
		dir := t.TempDir()
		b, err := file.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		drivertest.Run(t, processLocal{b}, drivertest.Options{URL: processLocalScheme + "://" + dir})
		return
	}
	b, err := file.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if failed, _ := failedChecks(t, processLocal{b}, drivertest.Options{}); len(failed) > 0 {
		t.Fatalf("the process-local driver fails checks in one process, so it shows nothing of exclusion-across-processes: %v", failed)
	}
	out, err := runSuiteInChild(t)
	if err == nil {
		t.Fatalf("exclusion-across-processes passed a driver whose exclusion holds only inside one process:\n%s", out)
	}
	for _, want := range []string{"--- FAIL: TestProcessLocalExclusionFails/exclusion-across-processes", "had more than one winner"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the child's output does not say %q:\n%s", want, out)
		}
	}
}

// TestURLOfAnotherBucketFails: an Options.URL that names a bucket other
// than the one under test fails exclusion-across-processes, saying so,
// rather than letting each process win on a bucket of its own.
func TestURLOfAnotherBucketFails(t *testing.T) {
	if os.Getenv(processLocalRunEnv) == "1" {
		b, err := file.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		drivertest.Run(t, b, drivertest.Options{URL: "file://" + t.TempDir()})
		return
	}
	out, err := runSuiteInChild(t)
	if err == nil {
		t.Fatalf("exclusion-across-processes passed with a URL of another directory:\n%s", out)
	}
	for _, want := range []string{"--- FAIL: TestURLOfAnotherBucketFails/exclusion-across-processes", "is not the bucket under test"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the child's output does not say %q:\n%s", want, out)
		}
	}
}

// runSuiteInChild runs t's exclusion-across-processes subtest in a child
// process with processLocalRunEnv set, and returns its output and its
// exit error.
func runSuiteInChild(t *testing.T) ([]byte, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^"+t.Name()+"$/^exclusion-across-processes$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), processLocalRunEnv+"=1")
	return cmd.CombinedOutput()
}
