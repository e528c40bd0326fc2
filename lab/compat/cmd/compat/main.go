// Command compat measures the servers scripts/compat started and writes
// docs/compatibility.md and lab/compat/testdata/results.json.
//
//	go run ./lab/compat/cmd/compat -servers FILE [-out DOC] [-json FILE]
//	go run ./lab/compat/cmd/compat -render [-out DOC] [-json FILE]
//
// -render writes DOC again from the JSON results, measuring nothing (after
// a change of the writer's format).
//
// FILE holds one JSON object per line, a compat.Server each (with the
// run's local credentials; the outputs never contain them). Servers are
// measured one at a time, in the file's order.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"time"

	"github.com/mushroomdb/bucketlease/drivertest"
	"github.com/mushroomdb/bucketlease/lab/compat"
)

func main() {
	servers := flag.String("servers", "", "file of servers, one JSON object per line")
	out := flag.String("out", "docs/compatibility.md", "the Markdown table to write")
	jsonOut := flag.String("json", "lab/compat/testdata/results.json", "the results as JSON, for the test")
	command := flag.String("command", "scripts/compat", "the command named in the table")
	render := flag.Bool("render", false, "only write the Markdown again from the JSON results")
	hold := flag.String("hold", "", "the outcome of TestRcloneUnderHold, for the table")
	flag.Parse()
	var err error
	if *render {
		err = rerender(*out, *jsonOut)
	} else {
		err = run(*servers, *out, *jsonOut, *command, *hold)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "compat:", err)
		os.Exit(1)
	}
}

func run(serversFile, out, jsonOut, command, hold string) error {
	if serversFile == "" {
		return fmt.Errorf("-servers is required")
	}
	data, err := os.ReadFile(serversFile)
	if err != nil {
		return err
	}
	var servers []compat.Server
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var s compat.Server
		if err := json.Unmarshal(line, &s); err != nil {
			return fmt.Errorf("%s line %d: %v", serversFile, n, err)
		}
		servers = append(servers, s)
	}
	if err := sc.Err(); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	t := &compat.Table{
		Date:      time.Now().UTC().Format("2006-01-02"),
		Command:   command,
		Platform:  fmt.Sprintf("%s %s/%s", runtime.Version(), runtime.GOOS, runtime.GOARCH),
		Checks:    drivertest.Names(),
		Scenarios: compat.ScenarioNames(),
		Hold:      hold,
	}
	logf := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "%s  "+format+"\n", append([]any{time.Now().UTC().Format("15:04:05")}, args...)...)
	}
	for _, s := range servers {
		logf("== %s %s", s.Name, s.Version)
		t.Services = append(t.Services, compat.Measure(ctx, s, compat.Options{Log: logf}))
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	js, err := t.EncodeJSON()
	if err != nil {
		return err
	}
	if err := os.WriteFile(jsonOut, js, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(out, t.Markdown(), 0o644); err != nil {
		return err
	}
	logf("wrote %s and %s", out, jsonOut)
	return nil
}

func rerender(out, jsonIn string) error {
	data, err := os.ReadFile(jsonIn)
	if err != nil {
		return err
	}
	t, err := compat.DecodeJSON(data)
	if err != nil {
		return fmt.Errorf("%s: %v", jsonIn, err)
	}
	// A check added to drivertest since the results were measured is a
	// column of "not measured", as the package's test renders it.
	t, err = t.WithChecks(drivertest.Names())
	if err != nil {
		return fmt.Errorf("%s: %v; measure again", jsonIn, err)
	}
	return os.WriteFile(out, t.Markdown(), 0o644)
}
