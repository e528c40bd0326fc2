package lease_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/mem"
	"github.com/mushroomdb/bucketlease/internal/location"
	"github.com/mushroomdb/bucketlease/lease"
)

// TestReadmeExampleIsThisOne checks that the README's Go example is an
// import block followed by backupUnderLease exactly as example_test.go has
// it, so the front page cannot drift from code that runs (Example_readme),
// and runs it where a copy of it must not back up (readmeFailsClosed).
func TestReadmeExampleIsThisOne(t *testing.T) {
	t.Run("same text", readmeSameText)
	t.Run("fails closed", readmeFailsClosed)
}

func readmeSameText(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "```go\n")
	block, _, ok2 := strings.Cut(block, "```")
	imports, fn, ok3 := strings.Cut(block, "\n)\n\n")
	if !ok || !ok2 || !ok3 || !strings.HasPrefix(imports, "import (") {
		t.Fatal("README has no Go example made of an import block and a function")
	}
	want, err := funcSource(string(src), "backupUnderLease")
	if err != nil {
		t.Fatal(err)
	}
	if fn != want {
		have, wantLines := strings.Split(fn, "\n"), strings.Split(want, "\n")
		for i := range max(len(have), len(wantLines)) {
			h, w := lineAt(have, i), lineAt(wantLines, i)
			if h != w {
				t.Fatalf("README's Go example differs from backupUnderLease in example_test.go at line %d of the function:\nREADME:  %q\nexample: %q", i+1, h, w)
			}
		}
	}
	// Every package the README imports is one the example file imports,
	// but for the driver that registers the README's URL scheme.
	for _, line := range strings.Split(imports, "\n")[1:] {
		path := strings.TrimPrefix(strings.TrimSpace(line), "_ ")
		if path == "" || strings.Contains(path, `driver/s3"`) {
			continue
		}
		if path, _, _ = strings.Cut(path, " "); !strings.Contains(string(src), "\t"+path+"\n") {
			t.Errorf("README's example imports %s, which example_test.go does not", path)
		}
	}
}

// funcSource returns the text of the top-level function name in src, from
// "func name(" to its closing brace.
func funcSource(src, name string) (string, error) {
	i := strings.Index(src, "\nfunc "+name+"(")
	if i < 0 {
		return "", fmt.Errorf("example_test.go has no func %s", name)
	}
	n := strings.Index(src[i+1:], "\n}\n")
	if n < 0 {
		return "", fmt.Errorf("func %s in example_test.go has no closing brace", name)
	}
	return src[i+1 : i+1+n+3], nil
}

func lineAt(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "(none)"
}

// readmeBody is the shape of the README's example: take the lease on url
// as instance id and run backup under it.
type readmeBody func(ctx context.Context, url, id string, backup func(context.Context, *bucket.Bucket) error) error

// readmeFailsClosed runs the README's example where a copy of it must not
// back up: on a store that ignores preconditions, under a lease
// another instance holds, and at a URL that does not open. In each it must
// return an error without running the backup and without panicking; on a
// working store it must run the backup and release the lease. The README's
// old example is the negative control: it panics on the store that ignores
// preconditions.
func readmeFailsClosed(t *testing.T) {
	if problems := readmeExampleProblems(backupUnderLease); len(problems) > 0 {
		t.Errorf("the README's example does not fail closed:\n%s", strings.Join(problems, "\n"))
	}
	problems := readmeExampleProblems(oldReadmeExample)
	found := false
	for _, p := range problems {
		found = found || strings.HasPrefix(p, "ignores preconditions: panicked")
	}
	if !found {
		t.Errorf("negative control: the old README example should panic on a store that ignores preconditions; the check found only %q", problems)
	}
}

// readmeExampleProblems runs body in each case and says what went wrong.
func readmeExampleProblems(body readmeBody) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	// run calls body with a backup that records whether it ran and writes a
	// chunk, and turns a panic into a problem.
	run := func(name, url string) (ran bool, err error, panicked bool) {
		defer func() {
			if p := recover(); p != nil {
				bad("%s: panicked: %v", name, p)
				panicked = true
			}
		}()
		err = body(ctx, url, "machine-a", func(ctx context.Context, w *bucket.Bucket) error {
			ran = true
			_, err := w.Put(ctx, "chunks/0001", []byte("…"), &bucket.PutOptions{If: bucket.IfAbsent()})
			return err
		})
		return ran, err, false
	}

	// A store that accepts every write whatever its condition.
	if ran, err, panicked := run("ignores preconditions", "readme-ignoring://"+uniqueName()+"/db1"); !panicked {
		if ran {
			bad("ignores preconditions: the backup ran without exclusion")
		}
		if !errors.Is(err, lease.ErrPreconditionsIgnored) {
			bad("ignores preconditions: returned %v, want an error wrapping ErrPreconditionsIgnored", err)
		}
	}

	// Another instance holds the lease.
	name := uniqueName()
	b, err := bucket.Open(ctx, "mem://"+name+"/db1")
	if err != nil {
		return append(problems, err.Error())
	}
	other, err := lease.Acquire(ctx, b, &lease.Options{InstanceID: "machine-b", Logger: quiet})
	if err != nil {
		return append(problems, err.Error())
	}
	if ran, err, panicked := run("held elsewhere", "mem://"+name+"/db1"); !panicked {
		if ran {
			bad("held elsewhere: the backup ran while another instance held the lease")
		}
		if !errors.Is(err, lease.ErrHeld) {
			bad("held elsewhere: returned %v, want an error wrapping ErrHeld", err)
		}
	}
	if !other.MayWrite() {
		bad("held elsewhere: the holder lost its lease: %v", other.Err())
	}
	other.Release(ctx)

	// A URL that does not open.
	if ran, err, panicked := run("does not open", "readme-no-such-scheme://x/db1"); !panicked && (ran || err == nil) {
		bad("does not open: ran %v, returned %v; want an error and no backup", ran, err)
	}

	// A working store: the backup runs, and the lease is released after.
	name = uniqueName()
	if ran, err, panicked := run("working store", "mem://"+name+"/db1"); !panicked {
		if !ran || err != nil {
			bad("working store: ran %v, returned %v; want the backup run and nil", ran, err)
		}
		b, _, _ := location.Open(ctx, "mem://"+name)
		if _, _, err := b.Get(ctx, "db1/chunks/0001", driver.GetOptions{}); err != nil {
			bad("working store: the backup's chunk is not in the bucket: %v", err)
		}
		next, err := lease.Acquire(ctx, bucket.New(b, "db1"), &lease.Options{InstanceID: "machine-b", Logger: quiet})
		if err != nil {
			bad("working store: the lease was not released after the backup: %v", err)
		} else {
			next.Release(ctx)
		}
	}
	return problems
}

// oldReadmeExample is the README's example before it checked every error,
// in readmeBody's shape: the negative control of readmeFailsClosed.
func oldReadmeExample(ctx context.Context, url, id string, backup func(context.Context, *bucket.Bucket) error) error {
	//lint:ignore SA4006 the old example overwrote this error unchecked; that is what this control shows
	b, err := bucket.Open(ctx, url)
	//lint:ignore SA4006 likewise
	c, err := lease.NewContender(b, &lease.Options{InstanceID: id}) // one per process
	l, err := c.Acquire(ctx)
	if errors.Is(err, lease.ErrHeld) {
		return err
	}
	defer l.Release(context.WithoutCancel(ctx))

	work, stop := l.Fence(ctx)
	defer stop()
	go l.Keep(work)
	return backup(work, l.Bucket())
}

var readmeBuckets sync.Map // name -> *mem.Bucket, for readme-ignoring://

// The scheme of a store that accepts every write whatever its condition.
func init() {
	driver.Register("readme-ignoring", driver.Scheme{Open: func(_ context.Context, u *url.URL) (driver.Bucket, string, error) {
		b, _ := readmeBuckets.LoadOrStore(u.Host, machineClocksOnly())
		return ignoringBucket{b.(*mem.Bucket)}, strings.Trim(u.Path, "/"), nil
	}})
}

// ignoringBucket drops the condition of every write: a service, proxy or
// old client that ignores If-None-Match and If-Match.
type ignoringBucket struct{ driver.Bucket }

func (b ignoringBucket) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	return b.Bucket.Put(ctx, key, data, driver.PutOptions{Metadata: opts.Metadata})
}

// PutStream is one Put, which drops the condition.
func (b ignoringBucket) PutStream(ctx context.Context, key string, r io.Reader, opts driver.PutOptions, s *driver.StreamOptions) (driver.Attrs, error) {
	return driver.PutWhole(ctx, b, key, r, opts, s)
}

func (b ignoringBucket) Delete(ctx context.Context, key string, _ driver.Condition) error {
	return b.Bucket.Delete(ctx, key, driver.Condition{})
}

var readmeRuns atomic.Int64

// uniqueName names a bucket no other run in this process uses.
func uniqueName() string { return fmt.Sprintf("readme-%d", readmeRuns.Add(1)) }
