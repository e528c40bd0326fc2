package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/lease/admin"
)

var showCommand = &command{
	name:    "show",
	args:    "URL [--json]",
	summary: "show who holds the lease, since when, and when it could be taken over",
	help: `Reads the lease object {prefix}/LEASE and says what a contender would make of
it now, by this machine's clock: its state, its holder, when it was acquired
and last renewed, its TTL, when it could be taken over and its version (which
"bucketlease break --version" needs). It writes and creates nothing; on
file:// a directory that does not exist is an error (exit 1).

It also lists what the prefix has pending: uploads started under it and
neither completed nor aborted (S3 multipart uploads, which the service keeps
until they are aborted; on file:// the staged files of puts in progress or
killed, which the next write removes), with their keys, start times and
upload ids, where the driver can list them (s3, r2, minio, file); "not
available on this driver" elsewhere; and any scratch key a lease probe left beside the lease object
(LEASE.acquire-probe-…, a process that died during its probe).

States:
  free      there is no lease; anyone may take it
  fresh     renewed less than its TTL ago; nobody may take it over
  stale     not renewed for its TTL or longer; the next contender takes it over
  released  its holder released it (ttl_s 0); anyone may take it
  suspect   stamped more than its TTL in the future, with a TTL over 1h, or not
            a lease record at all; a contender takes it over once it has seen
            it unchanged for one of its own TTLs

Examples:
  bucketlease show file:///var/backups/db1
  bucketlease show 's3://my-bucket/backups/db1?region=eu-west-1' --json | jq -r .version`,
	setup: setupShow,
}

func setupShow(fs *flag.FlagSet) runFunc {
	asJSON := fs.Bool("json", false, "print one JSON object")
	timeout := timeoutFlag(fs, defaultTimeout, "give up on a request the service has not answered after this long")
	return func(ctx context.Context, e *env, args []string) error {
		loc, err := oneLocation(fs, args)
		if err != nil {
			return err
		}
		st, b, prefix, err := inspect(ctx, loc, *timeout)
		if err != nil {
			return err
		}
		if b != nil {
			defer driver.Close(b)
		}
		pend := listPending(ctx, b, prefix, *timeout)
		if b == nil && fileDir(loc) != "" {
			pend = fileStaged(ctx, loc, *timeout)
		}
		scratch := leftoverScratchKeys(ctx, loc, b, prefix, *timeout)
		locked := lockHolders(b, st.Key)
		if *asJSON {
			j := statusJSON(loc, st)
			j.Pending = pend.json()
			for _, o := range scratch {
				j.ScratchKeys = append(j.ScratchKeys, scratchKeyJSON{Key: o.Key, Modified: utcOrEmpty(o.ModTime)})
			}
			j.LockHolders = lockJSON(locked)
			return writeJSON(e.stdout, j)
		}
		printStatus(e.stdout, loc, st, func(row func(k, v string)) {
			lockRows(st.Key, locked, row)
			pend.rows(loc, row)
			scratchRows(scratch, row)
		})
		return nil
	}
}

// inspect opens the URL and reads its lease. It creates nothing, not even
// on file://. It returns the bucket it opened and the prefix, or a nil
// bucket when a file:// directory without a LEASE was found free without
// opening the driver.
func inspect(ctx context.Context, loc *driver.Location, timeout time.Duration) (admin.Status, driver.Bucket, string, error) {
	if err := fileLeaseNotObject(loc); err != nil {
		return admin.Status{}, nil, "", err
	}
	if free, err := fileLeaseAbsent(loc); err != nil || free {
		return freeStatus(), nil, "", err
	}
	b, err := openLocation(ctx, loc)
	if err != nil {
		return admin.Status{}, nil, "", err
	}
	prefix := loc.Prefix
	st, err := admin.Inspect(ctx, bucket.New(withDeadlines(b, timeout, loc, "--timeout"), prefix), time.Now())
	if err != nil {
		return admin.Status{}, nil, "", explain(loc, fmt.Errorf("%s: %w", loc.String(), err))
	}
	return st, b, prefix, nil
}

// maxScratchLooked bounds how many keys beginning {prefix}/LEASE. show
// looks at for scratch keys.
const maxScratchLooked = 1000

// leftoverScratchKeys returns the scratch keys beside the lease object
// ({prefix}/LEASE.acquire-probe-…, and the break and stream probes'):
// each lease probe deletes its own, so one that is there was left by a
// process that died during its probe. It looks at no more than
// maxScratchLooked keys, and says nothing when it cannot list: the lease
// is what show is for. b is nil for a file:// directory found free without
// opening the driver, which is read directly.
func leftoverScratchKeys(ctx context.Context, loc *driver.Location, b driver.Bucket, prefix string, timeout time.Duration) []driver.Object {
	base := strings.TrimPrefix(prefix+"/", "/") + admin.Key("") + "."
	var found []driver.Object
	if b == nil {
		dir := fileDir(loc)
		if dir == "" {
			return nil
		}
		f, err := os.Open(dir)
		if err != nil {
			return nil
		}
		defer f.Close()
		for range maxScratchLooked / 100 {
			entries, err := f.ReadDir(100)
			for _, d := range entries {
				if name := d.Name(); strings.HasPrefix(name, base) && isScratchBeside(name, "") && d.Type().IsRegular() {
					o := driver.Object{Key: name}
					if fi, err := d.Info(); err == nil {
						o.ModTime = fi.ModTime()
					}
					found = append(found, o)
				}
			}
			if err != nil || len(entries) == 0 {
				break
			}
		}
		slices.SortFunc(found, func(a, b driver.Object) int { return strings.Compare(a.Key, b.Key) })
		return found
	}
	c, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	n := 0
	for o, err := range b.List(c, base) {
		if err != nil || n == maxScratchLooked {
			break
		}
		n++
		if isScratchBeside(o.Key, prefix) {
			found = append(found, o)
		}
	}
	return found
}

// isScratchBeside reports whether key is a scratch key of the lease on
// prefix (leaseKeyOf), not one of a lease further down.
func isScratchBeside(key, prefix string) bool {
	p, kind := leaseKeyOf(key)
	return kind == leaseScratchKey && admin.Key(p) == admin.Key(prefix)
}

// scratchRows writes the leftover scratch keys as rows of printStatus.
func scratchRows(keys []driver.Object, row func(k, v string)) {
	if len(keys) == 0 {
		return
	}
	what := "1 key"
	if len(keys) > 1 {
		what = fmt.Sprintf("%d keys", len(keys))
	}
	row("scratch", what+" left by a probe that did not finish, holding nothing; safe to delete once a minute old")
	now := time.Now()
	for _, o := range keys {
		when := ""
		if !o.ModTime.IsZero() {
			when = fmt.Sprintf(", written %s (%s)", ago(now, o.ModTime), utc(o.ModTime))
		}
		row("", o.Key+when)
	}
}

func utcOrEmpty(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return utc(t)
}
