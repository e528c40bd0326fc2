package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/bounded"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/exitcode"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/report"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/internal/location"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

var listCommand = &command{
	name:    "list",
	args:    "URL [--late] [--json] [--max-keys N]",
	summary: "list every lease under a prefix, with its holder, state and version",
	help: `Lists the keys under the URL's prefix and reads every lease object among
them ({prefix}/LEASE, and any key ending in /LEASE further down), as
"bucketlease show" would read each: its prefix, state, holder, when it was
renewed and its version (which "bucketlease break --version" needs). Like
restic's "list locks". It writes and creates nothing; on file:// a directory
that does not exist is an error (exit 1).

It looks at --max-keys keys at most and then stops, saying so (with --json,
"truncated": true): a bucket prefix with millions of objects is not listed
to the end. A lease object that cannot be read is listed with its error, and
list exits 1 after listing the rest.

With --late it lists instead the objects under the URL's own lease that
were written late: stamped with the epoch of a holder whose lease had
already passed to another when the service stored them (a process paused
mid-request that sent it when it woke). It needs a driver that keeps
metadata and reports the service's time, and a lease taken by this
version; it exits 10 if it finds any. Restore nothing from them.

Examples:
  bucketlease list file:///var/backups
  bucketlease list 's3://my-bucket/backups?region=eu-west-1' --json | jq -r '.leases[] | select(.state == "fresh") | .prefix'`,
	setup: setupList,
}

// listMaxKeys is how many keys list looks at by default.
const listMaxKeys = 10000

func setupList(fs *flag.FlagSet) runFunc {
	asJSON := fs.Bool("json", false, "print one JSON object")
	late := fs.Bool("late", false, "list the objects under the URL's lease that a holder wrote after its lease had passed on, instead of the leases")
	maxKeys := fs.Int("max-keys", listMaxKeys, "look at this many keys at most, then stop and say so; 1 to 10,000,000")
	timeout := timeoutFlag(fs, time.Minute, "give up on the listing, or on a read of one lease, that has not finished after this long")
	return func(ctx context.Context, e *env, args []string) error {
		loc, err := oneLocation(fs, args)
		if err != nil {
			return err
		}
		if *maxKeys < 1 || *maxKeys > 10_000_000 {
			return exitcode.Usagef("--max-keys %d: use 1 to 10,000,000", *maxKeys)
		}
		if err := refuseInProcess("list", loc); err != nil {
			return err
		}
		if _, err := fileLeaseAbsent(loc); err != nil { // a directory that is not there
			return err
		}
		b, err := openLocation(ctx, loc)
		if err != nil {
			return err
		}
		prefix := loc.Prefix
		defer location.Close(b)
		if *late {
			return listLate(ctx, e, b, loc, *asJSON, *maxKeys, *timeout)
		}
		res, err := listLeases(ctx, b, prefix, *maxKeys, *timeout, loc)
		if err != nil {
			return explain(loc, fmt.Errorf("%s: %w", loc.String(), err))
		}
		if *asJSON {
			if err := report.WriteJSON(e.stdout, res); err != nil {
				return err
			}
		} else {
			report.PrintList(e.stdout, loc.String(), res)
		}
		if res.Failed > 0 {
			return fmt.Errorf("%d of the %d lease objects found could not be read; see their errors above", res.Failed, len(res.Leases))
		}
		return nil
	}
}

// leaseKeyKind is what a key is to the lease of the prefix it sits in.
type leaseKeyKind int

const (
	notLeaseKey     leaseKeyKind = iota
	leaseObjectKey               // {p}/LEASE: the lease object of prefix p
	leaseScratchKey              // {p}/LEASE.<kind>-probe-<16 hex digits>: a scratch key of p's lease
)

// leaseKeyOf says whether key is named as a lease's own key, under any
// prefix: the lease object, or a scratch key beside it, by its last
// segment alone, as the lease names them (admin.Key, admin.IsScratchKey);
// and the prefix of that lease (key without its last segment, "" at the
// top). It is the one rule of what a nested lease is: put refuses such a
// key (checkPutKey), list reads every lease object it names
// (leasePrefix), show lists the scratch keys beside its lease.
func leaseKeyOf(key string) (string, leaseKeyKind) {
	prefix, name := "", key
	if i := strings.LastIndex(key, "/"); i >= 0 {
		prefix, name = key[:i], key[i+1:]
	}
	switch {
	case name == admin.Key(""):
		return prefix, leaseObjectKey
	case admin.IsScratchKey(name):
		return prefix, leaseScratchKey
	}
	return "", notLeaseKey
}

// leasePrefix returns the lease prefix whose lease object key is, and
// whether key is a lease object's at all: named as one (leaseKeyOf), and
// the very key the lease of its prefix reads ("/LEASE" and "a//LEASE" are
// not: admin.Key drops the trailing slashes of a prefix).
func leasePrefix(key string) (string, bool) {
	p, kind := leaseKeyOf(key)
	return p, kind == leaseObjectKey && admin.Key(p) == key
}

// leaseURL is the URL of the lease of prefix p under loc's prefix, as
// show and break take it (redacted if loc's URL holds secrets).
func leaseURL(loc *location.Location, p string) string {
	if p == "" {
		return loc.String()
	}
	u := loc.URL()
	u.Path = strings.TrimRight(u.Path, "/") + "/" + p
	u.RawPath = ""
	return displayURL(u.String())
}

// listLeases lists the keys under prefix, at most maxKeys of them, and
// inspects every lease object among them.
func listLeases(ctx context.Context, b driver.Bucket, prefix string, maxKeys int, timeout time.Duration, loc *location.Location) (report.List, error) {
	res := report.List{URL: loc.String(), Leases: []report.Listed{}}
	under := strings.Trim(prefix, "/")
	if under != "" {
		under += "/"
	}
	lctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var found []string
	for obj, err := range b.List(lctx, under) {
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
				return res, fmt.Errorf("the listing did not finish within --timeout %v (after %d keys): %w", timeout, res.Keys, err)
			}
			return res, fmt.Errorf("list %q: %w", under, err)
		}
		if res.Keys == maxKeys {
			res.Truncated = true
			break
		}
		res.Keys++
		if p, ok := leasePrefix(obj.Key); ok {
			found = append(found, p)
		}
	}
	cancel()
	rb := bounded.New(b, timeout, loc, "--timeout")
	for _, p := range found {
		st, err := admin.Inspect(ctx, bucket.New(rb, p), time.Now())
		j := report.Listed{Prefix: p}
		if err != nil {
			j.Key, j.Error = admin.Key(p), err.Error()
			res.Failed++
		} else {
			j.ShowJSON = report.StatusJSON(loc, st)
		}
		j.URL = leaseURL(loc, p)
		res.Leases = append(res.Leases, j)
	}
	res.Now = time.Now().UTC().Format(time.RFC3339Nano)
	return res, nil
}
