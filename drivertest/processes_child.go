package drivertest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/internal/location"
)

// The child's side of exclusion-across-processes (processes.go).

// raceAsChild is the child's part, run by Run in the check's subtest when
// childEnv is set: it races as the spec says and writes its result.
func raceAsChild(t *testing.T, env string) {
	t.Helper()
	is, specPath, _ := strings.Cut(env, ":")
	i, err := strconv.Atoi(is)
	if err != nil {
		t.Fatalf("%s=%q: not INDEX:SPECFILE", childEnv, env)
	}
	data, err := os.ReadFile(specPath)
	if err != nil {
		t.Fatalf("%s: %v", childEnv, err)
	}
	var sp xprocSpec
	if err := json.Unmarshal(data, &sp); err != nil {
		t.Fatalf("%s: %v", specPath, err)
	}
	if t.Name() != sp.Test {
		t.Skipf("a child process of %s, which races in %s", xprocName, sp.Test)
	}
	ctx, cancel := context.WithDeadline(t.Context(), sp.Deadline)
	defer cancel()
	r := sp.race(ctx, i, os.Stdin, os.Stdout)
	data, err = json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	tmp := sp.resultPath(i) + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, sp.resultPath(i)); err != nil {
		t.Fatal(err)
	}
	if r.Err != "" {
		t.Error(r.Err)
	}
}

// race is child p's part: open the bucket, check that it is the suite's,
// say so on stdout, wait for "go" on stdin, and race.
func (sp *xprocSpec) race(ctx context.Context, p int, stdin io.Reader, stdout io.Writer) xprocResult {
	b, _, err := location.Open(ctx, sp.URL)
	if err != nil {
		return xprocResult{Err: fmt.Sprintf("opening Options.URL: %v", err)}
	}
	defer location.Close(b)
	if why := sp.await(ctx, b, stdin, stdout); why != "" {
		return xprocResult{Err: why}
	}
	return sp.racePhases(ctx, p, b)
}

// await checks that b is the bucket under test, says so on stdout and
// waits for the suite's "go" on stdin; it returns why not, if not.
func (sp *xprocSpec) await(ctx context.Context, b driver.Bucket, stdin io.Reader, stdout io.Writer) string {
	data, _, err := read(ctx, b, sp.Marker)
	switch {
	case err != nil:
		return fmt.Sprintf("the bucket Options.URL (%s) opens is not the bucket under test: Get of the key %s the suite wrote there: %s",
			location.Redact(sp.URL), sp.Marker, outcome(err))
	case string(data) != sp.MarkerBody:
		return fmt.Sprintf("the bucket Options.URL (%s) opens is not the bucket under test: the key %s the suite wrote holds %q",
			location.Redact(sp.URL), sp.Marker, clip(data))
	}
	if _, err := fmt.Fprintln(stdout, sp.Ready); err != nil {
		return fmt.Sprintf("writing to stdout: %v", err)
	}
	said := make(chan bool, 1)
	go func() {
		line, err := bufio.NewReader(stdin).ReadString('\n')
		said <- err == nil && line == "go\n"
	}()
	select {
	case ok := <-said:
		if !ok {
			return "stdin closed without a go: the suite's process gave up"
		}
	case <-ctx.Done():
		return fmt.Sprintf("waiting for the suite's go: %v", ctx.Err())
	}
	return ""
}

// racePhases races child p's writes on b, all three phases at once.
func (sp *xprocSpec) racePhases(ctx context.Context, p int, b driver.Bucket) xprocResult {
	var (
		r   xprocResult
		mu  sync.Mutex
		wg  sync.WaitGroup
		odd = func(what, key string, err error) {
			mu.Lock()
			defer mu.Unlock()
			r.Odd = append(r.Odd, fmt.Sprintf("process %d, %s %s: %s", p, what, key, outcome(err)))
		}
	)
	phase := func(what string, keys []string, write func(k int) (driver.Version, error)) string {
		letters := make([]byte, len(keys))
		for k := range keys {
			_, err := write(k)
			switch {
			case err == nil:
				letters[k] = 'w'
			case errors.Is(err, driver.ErrOutcomeUnknown):
				letters[k] = 'u'
			case errors.Is(err, driver.ErrPrecondition):
				letters[k] = 'r'
			default:
				letters[k] = 'e'
				odd(what, keys[k], err)
			}
		}
		return string(letters)
	}
	wg.Go(func() {
		r.Create = phase("IfAbsent", sp.Create, func(k int) (driver.Version, error) {
			return put(ctx, b, sp.Create[k], xprocBody(p), driver.IfAbsent())
		})
	})
	wg.Go(func() {
		r.Update = phase("IfMatch", sp.Update, func(k int) (driver.Version, error) {
			return put(ctx, b, sp.Update[k], xprocBody(p), driver.IfMatch(sp.Start[k]))
		})
	})
	wg.Go(func() {
		r.Stream = phase("streamed IfAbsent", sp.Stream, func(k int) (driver.Version, error) {
			return stream(ctx, b, sp.Stream[k], newBody(xprocSeed(p, k), xprocStreamSize), driver.IfAbsent(), streamOpts(nil))
		})
	})
	wg.Wait()
	return r
}
