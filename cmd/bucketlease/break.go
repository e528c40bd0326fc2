package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/lease"
)

var breakCommand = &command{
	name:    "break",
	args:    "URL --version V [--force] [--yes] [--json]",
	summary: "remove a stuck lease, only if it is still the version you looked at",
	help: `Removes the lease object {prefix}/LEASE so that another instance can take the
lease at once, but only if it still has version V (from "bucketlease show"):
it shows what it will remove, then overwrites it with one conditional
request, If-Match: V, by a released record (ttl_s 0) that every contender may
take over at once. It never deletes: many services that serve the S3 API
ignore conditions on DELETE. If the lease changed since you looked (its
holder renewed it, or someone else took it), break refuses, writes nothing
and exits 4.

On a terminal (stdin is one), break shows the lease object and asks before
it writes: only "yes" breaks it; any other answer exits 4 and writes
nothing. --yes skips the question. Without a terminal (a script, cron) it
never asks: --version V, which names the one object to break, is the
confirmation, as it always was.

A fresh lease (renewed less than its TTL ago) has a live holder, probably:
break refuses it (exit 4) unless you pass --force. Breaking a live holder's
lease lets another instance start writing while the old holder may still be
writing until its fence; it learns that it lost the lease at its next renewal.

Examples:
  bucketlease show file:///var/backups/db1          # note the version
  bucketlease break file:///var/backups/db1 --version 5e9c0d61b1c2a1f4e0b6e1a3f2d4c5b6`,
	setup: setupBreak,
}

func setupBreak(fs *flag.FlagSet) runFunc {
	version := fs.String("version", "", "the version of the lease object to remove, as show prints it (required)")
	force := fs.Bool("force", false, "break a fresh lease too")
	yes := fs.Bool("yes", false, "on a terminal, break without asking for confirmation (without a terminal break never asks: --version is the confirmation)")
	asJSON := fs.Bool("json", false, "print one JSON object: what was done, or the refusal or error with its exit code and class")
	timeout := new(time.Duration)
	durationVar(fs, timeout, "timeout", defaultTimeout, "give up on a request the service has not answered after this long")
	return func(ctx context.Context, e *env, args []string) error {
		rawURL, err := oneURL(fs, args)
		if err != nil {
			return err
		}
		if *version == "" {
			return usageErrorf("break needs --version V, the version that show prints; run: bucketlease show %s", shellQuote(displayURL(rawURL)))
		}
		if err := refuseInProcess("break", rawURL); err != nil {
			return err
		}
		if *timeout <= 0 {
			return usageErrorf("--timeout %v: it must be positive", *timeout)
		}
		var confirm func() error
		if !*yes && isTerminal(os.Stdin) {
			confirm = func() error { return askYes(os.Stdin, e.stderr) }
		}
		if !*asJSON {
			return breakLease(ctx, e.stdout, rawURL, driver.Version(*version), *force, *timeout, confirm)
		}
		var out strings.Builder
		if err := breakLease(ctx, &out, rawURL, driver.Version(*version), *force, *timeout, confirm); err != nil {
			return err // the error object is written by jsonFailure
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		return writeJSON(e.stdout, errorJSON{Command: "break", Exit: exitOK, Class: "ok", Message: lines[len(lines)-1]})
	}
}

// askYes asks on w whether to break the lease shown, and reads the answer
// from r: only "yes" breaks it, as terraform force-unlock asks.
func askYes(r io.Reader, w io.Writer) error {
	fmt.Fprint(w, "Break this lease? Only 'yes' breaks it (--yes skips this question): ")
	answer, err := bufio.NewReader(r).ReadString('\n')
	if strings.TrimSpace(answer) == "yes" {
		return nil
	}
	if err != nil && answer == "" {
		fmt.Fprintln(w)
	}
	return withCode(exitRefused, withClass("cancelled", errors.New("not broken: the answer was not yes; nothing was written")))
}

// breakLease breaks the lease at rawURL if it is still version v; confirm,
// if not nil, is asked once the lease is shown and found breakable.
func breakLease(ctx context.Context, w io.Writer, rawURL string, v driver.Version, force bool, timeout time.Duration, confirm func() error) error {
	if err := fileLeaseNotObject(rawURL); err != nil {
		return err
	}
	if free, err := fileLeaseAbsent(rawURL); err != nil {
		return err
	} else if free {
		fmt.Fprintf(w, "There is no lease at %s: nothing to break.\n", lease.Key(""))
		return nil
	}
	b, prefix, err := openURL(ctx, rawURL)
	if err != nil {
		return err
	}
	b = withDeadlines(b, timeout, rawURL, "--timeout")
	st, err := lease.Inspect(ctx, b, prefix, time.Now())
	if err != nil {
		return explain(rawURL, err)
	}
	if st.State == lease.Free {
		fmt.Fprintf(w, "There is no lease at %s: nothing to break.\n", st.Key)
		return nil
	}
	fmt.Fprintln(w, "The lease object:")
	printStatus(w, rawURL, st)
	if !sameVersion(st.Version, v) {
		return withCode(exitRefused, withClass("precondition", fmt.Errorf("refused: %s is now version %s, not %s; it changed since you looked (its holder renewed it, or another instance took it over). Look again and check it before breaking it: bucketlease show %s",
			st.Key, st.Version, v, shellQuote(displayURL(rawURL)))))
	}
	v = st.Version // as the service spells it, quotes and all
	if st.State == lease.Fresh && !force {
		return withCode(exitRefused, withClass("held", fmt.Errorf("refused: %s is fresh: instance %s renewed it %s and is probably alive. Stop it, or wait until the lease is stale, or pass --force to break it anyway",
			st.Key, st.Holder(), ago(st.Now, st.Record.RenewedAt))))
	}
	if confirm != nil {
		// The answer may take a while; the break is still If-Match v, so a
		// lease renewed or taken meanwhile is refused by the service.
		if err := confirm(); err != nil {
			return err
		}
	}
	err = lease.Break(ctx, b, prefix, v, time.Now())
	if errors.Is(err, driver.ErrPrecondition) {
		return withCode(exitRefused, withClass("precondition", fmt.Errorf("refused by the service: %s changed between the read and the removal; nothing was removed. Look again: bucketlease show %s",
			st.Key, shellQuote(displayURL(rawURL)))))
	}
	if err != nil {
		return explain(rawURL, fmt.Errorf("break %s: %w", st.Key, err))
	}
	fmt.Fprintf(w, "Broke the lease %s (version %s): overwrote it with If-Match by a released record (ttl_s 0). Another instance may take it now.\n", st.Key, v)
	return nil
}

// sameVersion reports whether the version typed is the object's: the same,
// or the same but for the double quotes an ETag is spelt with, which a
// shell strips from a pasted --version "3820eb…".
func sameVersion(object, typed driver.Version) bool {
	unquote := func(v driver.Version) string {
		s := string(v)
		if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
			return s[1 : len(s)-1]
		}
		return s
	}
	return object == typed || unquote(object) == unquote(typed)
}

// shellQuote quotes s for a POSIX shell, leaving it as it is when it
// needs no quotes, so that a command line the tool suggests can be pasted.
func shellQuote(s string) string {
	safe := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_@%+=:,./-", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
