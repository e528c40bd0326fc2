package cli

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

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/bounded"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/exitcode"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/filelock"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/holding"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/report"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/term"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/internal/location"
	"github.com/mushroomdb/bucketlease/lease"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

var breakCommand = &command{
	name:    "break",
	args:    "URL --version V [--force] [--allow-overlap] [--kill-stopped-lock-holder] [--yes] [--json]",
	summary: "end a stuck lease, only if it is still the version you looked at",
	help: `Ends the lease on the URL's prefix ({prefix}/LEASE), whoever holds it, but
only if the lease object still has version V (from "bucketlease show"): it
shows the lease object, then overwrites it with one conditional request,
If-Match: V, by a record naming bucketlease-break. The broken holder learns
that it lost the lease at its next renewal or read-back and stops (hold
kills its command at once). It never deletes: many services that serve the
S3 API ignore conditions on DELETE. If the lease changed since you looked
(its holder renewed it, or someone else took it), break refuses, writes
nothing and exits 4.

Break never lets two writers in at once. A stale lease's holder has passed
its fence, so break writes a released record (ttl_s 0) that anyone may take
over at once. A fresh lease (renewed less than its TTL ago) has a live
holder, probably: break refuses it (exit 4) unless you pass --force, and
then writes a record that keeps the renewed_at and ttl_s of the record it
broke, so the lease stays fresh until the broken record would have gone
stale, a TTL after its last renewal, or, where the driver reports the
service's time, until a TTL (and the service clock's resolution) after the
service stored the break, whichever is later (break reads its record back
and prints when): by then the broken holder has stopped writing (two thirds
of a TTL after its last renewal, its fence), even for a contender whose
clock runs up to a third of a TTL ahead.
"hold --wait" waits until then and takes it over. A suspect lease stays
suspect (a contender waits one of its own TTLs); an object that is not a
lease record is blocked for the default TTL (30s).

--allow-overlap writes the released record whatever the lease, so that
another instance may take it at once: if the broken holder is alive, it may
still write for up to two thirds of its TTL after its last renewal, at the
same time as the next holder. Use it only for a holder known to be dead
(its machine is off).

On file://, a process stopped (SIGSTOP, Ctrl-Z, a debugger, a frozen
cgroup) while it holds the file driver's lock on LEASE, for the few
milliseconds of a write, keeps everyone out, break too, until it is
resumed or ended: break fails naming it. --kill-stopped-lock-holder ends
such a process with SIGKILL, once the lease is shown and confirmed, waits
until it is gone and then breaks. A stopped process acts on no other
signal until it is resumed, and then finishes its write first; SIGKILL
ends it before it writes anything more. It ends only a process that is
stopped and holds that lock, never a running one.

On a terminal (stdin is one), break shows the lease object and asks before
it writes: only "yes" breaks it; any other answer exits 4 and writes
nothing. --yes skips the question. Without a terminal (a script, cron) it
never asks: --version V, which names the one object to break, is the
confirmation, as it always was.

Examples:
  bucketlease show file:///var/backups/db1          # note the version
  bucketlease break file:///var/backups/db1 --version 5e9c0d61b1c2a1f4e0b6e1a3f2d4c5b6`,
	setup: setupBreak,
}

func setupBreak(fs *flag.FlagSet) runFunc {
	version := fs.String("version", "", "the version of the lease object to remove, as show prints it (required)")
	force := fs.Bool("force", false, "break a fresh lease too; nobody may take it over until its holder's fence has passed (when the broken record would have gone stale)")
	overlap := fs.Bool("allow-overlap", false, "let another instance take the lease at once: a broken holder that is alive may still write for up to 2/3 of its TTL after its last renewal, at the same time as the next holder")
	yes := fs.Bool("yes", false, "on a terminal, break without asking for confirmation (without a terminal break never asks: --version is the confirmation)")
	killStopped := fs.Bool("kill-stopped-lock-holder", false, "file:// only: end (SIGKILL) a process stopped while it holds the file driver's lock on LEASE, which keeps every writer out until it is resumed or ended")
	asJSON := fs.Bool("json", false, "print one JSON object: what was done, or the refusal or error with its exit code and class")
	timeout := timeoutFlag(fs, defaultTimeout, "give up on a request the service has not answered after this long")
	return func(ctx context.Context, e *env, args []string) error {
		loc, err := oneLocation(fs, args)
		if err != nil {
			return err
		}
		if *version == "" {
			return exitcode.Usagef("break needs --version V, the version that show prints; run: bucketlease show %s", term.ShellQuote(loc.String()))
		}
		if err := refuseInProcess("break", loc); err != nil {
			return err
		}
		if *killStopped && loc.Scheme != "file" {
			return exitcode.Usagef("--kill-stopped-lock-holder is for file:// only: no other driver's lock is held by a process on this machine")
		}
		how := breakHow{force: *force, overlap: *overlap, killStopped: *killStopped}
		var confirm func() error
		if !*yes && term.IsTerminal(os.Stdin) {
			confirm = func() error { return askYes(os.Stdin, e.stderr) }
		}
		if !*asJSON {
			return breakLease(ctx, e.stdout, loc, driver.Version(*version), how, *timeout, confirm)
		}
		var out strings.Builder
		if err := breakLease(ctx, &out, loc, driver.Version(*version), how, *timeout, confirm); err != nil {
			return err // the error object is written by jsonFailure
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		return report.WriteJSON(e.stdout, errorJSON{Command: "break", Exit: exitcode.OK, Class: "ok", Message: lines[len(lines)-1]})
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
	return exitcode.With(exitcode.Refused, withClass("cancelled", errors.New("not broken: the answer was not yes; nothing was written")))
}

// breakHow is what the operator allowed: breaking a fresh lease (force),
// letting the next holder in at once (overlap), and ending a process
// stopped while it holds the file driver's lock on LEASE (killStopped).
type breakHow struct{ force, overlap, killStopped bool }

// breakLease breaks the lease at loc if it is still version v; confirm,
// if not nil, is asked once the lease is shown and found breakable.
func breakLease(ctx context.Context, w io.Writer, loc *location.Location, v driver.Version, how breakHow, timeout time.Duration, confirm func() error) error {
	if err := fileLeaseNotObject(loc); err != nil {
		return err
	}
	if free, err := fileLeaseAbsent(loc); err != nil {
		return err
	} else if free {
		fmt.Fprintf(w, "There is no lease at %s: nothing to break.\n", admin.Key(""))
		return nil
	}
	raw, err := openLocation(ctx, loc)
	if err != nil {
		return err
	}
	prefix := loc.Prefix
	b := bounded.New(raw, timeout, loc, "--timeout")
	st, err := admin.Inspect(ctx, bucket.New(b, prefix), time.Now())
	if err != nil {
		return explain(loc, err)
	}
	if st.State == admin.Free {
		fmt.Fprintf(w, "There is no lease at %s: nothing to break.\n", st.Key)
		return nil
	}
	fmt.Fprintln(w, "The lease object:")
	report.PrintStatus(w, loc, st)
	if !sameVersion(st.Version, v) {
		return exitcode.With(exitcode.Refused, withClass("precondition", fmt.Errorf("refused: %s is now version %s, not %s; it changed since you looked (its holder renewed it, or another instance took it over). Look again and check it before breaking it: bucketlease show %s",
			st.Key, st.Version, v, term.ShellQuote(loc.String()))))
	}
	v = st.Version // as the service spells it, quotes and all
	if st.State == admin.Fresh && !how.force {
		return exitcode.With(exitcode.Refused, withClass("held", fmt.Errorf("refused: %s is fresh: instance %s renewed it %s and is probably alive. Stop it, or wait until the lease is stale, or pass --force to break it anyway",
			st.Key, st.Holder(), report.Ago(st.Now, st.Record.RenewedAt))))
	}
	if confirm != nil {
		// The answer may take a while; the break is still If-Match v, so a
		// lease renewed or taken meanwhile is refused by the service.
		if err := confirm(); err != nil {
			return err
		}
	}
	if how.killStopped {
		if err := filelock.EndStopped(ctx, w, raw, st.Key); err != nil {
			return explain(loc, err)
		}
	}
	err = lease.Break(ctx, bucket.New(b, prefix), v, time.Now(), how.overlap)
	if !how.killStopped {
		err = filelock.KillStoppedHint(err)
	}
	if errors.Is(err, driver.ErrPrecondition) {
		return exitcode.With(exitcode.Refused, withClass("precondition", fmt.Errorf("refused by the service: %s changed between the read and the removal; nothing was removed. Look again: bucketlease show %s",
			st.Key, term.ShellQuote(loc.String()))))
	}
	if err != nil {
		return explain(loc, fmt.Errorf("break %s: %w", st.Key, err))
	}
	// The break's record, read back, is judged by the lease's own rules:
	// the moment a waiter takes it over, which depends on when the
	// service stored it, not only on what it says.
	after, aerr := admin.Inspect(ctx, bucket.New(b, prefix), time.Now())
	if aerr != nil || after.Record == nil || after.Record.InstanceID != admin.BreakerID {
		after = admin.Status{}
	}
	fmt.Fprintf(w, "Broke the lease %s (version %s): %s\n", st.Key, v, brokeText(st, after, how.overlap, time.Now()))
	return nil
}

// brokeText says what break wrote over st and when another instance may
// take the lease: lease.Break's record, judged at now, as after (the
// lease object read back after the break, if it still holds the break's
// record; else the zero Status) says.
func brokeText(st, after admin.Status, overlap bool, now time.Time) string {
	switch {
	case overlap && st.State == admin.Fresh:
		until := st.Record.RenewedAt.Add(st.Record.TTL() * 2 / 3)
		who := "its holder " + holding.HolderText(st.Holder())
		if st.Holder() == admin.BreakerID { // a break's record keeps the broken holder's renewal
			who = "the holder broken before"
		}
		return fmt.Sprintf("overwrote it with If-Match by a released record (ttl_s 0), as --allow-overlap asks. Another instance may take it now, while %s, if alive, may still write until its fence, about %s (%s), two thirds of its TTL after its last renewal.",
			who, report.UTC(until), fromNow(now, until))
	case overlap || st.State == admin.Stale || st.State == admin.Released:
		return "overwrote it with If-Match by a released record (ttl_s 0). Another instance may take it now."
	case st.State == admin.Fresh:
		return brokeFreshText(st, after, now)
	case st.Record != nil: // suspect
		return fmt.Sprintf("overwrote it with If-Match by a record of %s that keeps its renewed_at and ttl_s, so it stays suspect: a contender takes it over once it has seen it unchanged for one of its own TTLs", admin.BreakerID)
	case after.State == admin.Fresh: // not a lease record
		return fmt.Sprintf("overwrote it with If-Match by a record of %s, fresh for %v: nothing is known of the object's writer. Another instance may take it from %s (%s) on, when that record goes stale",
			admin.BreakerID, lease.DefaultTTL, report.UTC(after.TakeoverAt), fromNow(now, after.TakeoverAt))
	default: // not a lease record
		return fmt.Sprintf("overwrote it with If-Match by a record of %s, fresh for %v: nothing is known of the object's writer. Another instance may take it once that has passed (bucketlease show says when)", admin.BreakerID, lease.DefaultTTL)
	}
}

// brokeFreshText is brokeText for a fresh record st, broken without
// --allow-overlap. The break's record keeps st's renewed_at and ttl_s, but
// where the driver reports the service's time a contender also waits a TTL
// (and the clock's resolution) after the service stored it, so it goes
// stale at the later of the two: after.TakeoverAt, read back. Without
// that, the broken record's own stale time is a lower bound.
func brokeFreshText(st, after admin.Status, now time.Time) string {
	const stops = "its holder learns at its next renewal that it lost the lease, and stops writing by its fence, before then. Another instance may take the lease from then on (hold --wait does); --allow-overlap would have let one in at once."
	if after.State == admin.Fresh {
		return fmt.Sprintf("overwrote it with If-Match by a record of %s that stays fresh until %s (%s), when a waiter takes it over (a TTL after the broken holder's last renewal, or after the service stored the break, whichever is later): %s",
			admin.BreakerID, report.UTC(after.TakeoverAt), fromNow(now, after.TakeoverAt), stops)
	}
	free := st.Record.RenewedAt.Add(st.Record.TTL())
	return fmt.Sprintf("overwrote it with If-Match by a record of %s that stays fresh until %s (%s) at the earliest, when the broken record would have gone stale, and up to a TTL after the break where the service's clock is checked (it could not be read back: bucketlease show says when): %s",
		admin.BreakerID, report.UTC(free), fromNow(now, free), stops)
}

// fromNow renders how long after now t comes, for people: "in 12s", or
// "already passed".
func fromNow(now, t time.Time) string {
	if d := t.Sub(now).Round(time.Second); d > 0 {
		return "in " + d.String()
	}
	return "already passed"
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
