package cli

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/mushroomdb/bucketlease/bucket"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/bounded"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/filelock"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/report"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/file"
	"github.com/mushroomdb/bucketlease/internal/location"
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
			defer location.Close(b)
		}
		pend := report.ListPending(ctx, b, prefix, *timeout)
		if b == nil && fileDir(loc) != "" {
			pend = fileStaged(ctx, loc, *timeout)
		}
		scratch := leftoverScratchKeys(ctx, loc, b, prefix, *timeout)
		locked := filelock.Holders(b, st.Key)
		if *asJSON {
			j := report.StatusJSON(loc, st)
			j.Pending = pend.JSON()
			for _, o := range scratch {
				j.ScratchKeys = append(j.ScratchKeys, report.ScratchKeyJSON{Key: o.Key, Modified: utcOrEmpty(o.ModTime)})
			}
			j.LockHolders = locked
			return report.WriteJSON(e.stdout, j)
		}
		report.PrintStatus(e.stdout, loc, st, func(row func(k, v string)) {
			filelock.Rows(st.Key, locked, row)
			pend.Rows(loc, row)
			scratchRows(scratch, row)
		})
		return nil
	}
}

// inspect opens the URL and reads its lease. It creates nothing, not even
// on file://. It returns the bucket it opened and the prefix, or a nil
// bucket when a file:// directory without a LEASE was found free without
// opening the driver.
func inspect(ctx context.Context, loc *location.Location, timeout time.Duration) (admin.Status, driver.Bucket, string, error) {
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
	st, err := admin.Inspect(ctx, bucket.New(bounded.New(b, timeout, loc, "--timeout"), prefix), time.Now())
	if err != nil {
		return admin.Status{}, nil, "", explain(loc, fmt.Errorf("%s: %w", loc.String(), err))
	}
	return st, b, prefix, nil
}

// fileStaged lists the staged files of a free file:// directory, which
// show found free without opening the driver: it opens the driver only if
// that creates nothing (the driver's folder .bucketlease, with its locks
// and tmp, is there). Without that folder the driver never staged a write
// there, so nothing is pending.
func fileStaged(ctx context.Context, loc *location.Location, timeout time.Duration) report.Pending {
	if !file.Opened(fileDir(loc)) {
		return report.Pending{Available: true}
	}
	b, err := openLocation(ctx, loc)
	if err != nil {
		return report.Pending{Available: true, Err: err}
	}
	prefix := loc.Prefix
	defer location.Close(b)
	return report.ListPending(ctx, b, prefix, timeout)
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
func leftoverScratchKeys(ctx context.Context, loc *location.Location, b driver.Bucket, prefix string, timeout time.Duration) []driver.Object {
	base := strings.TrimPrefix(prefix+"/", "/") + admin.Key("") + "."
	var found []driver.Object
	if b == nil {
		dir := fileDir(loc)
		if dir == "" {
			return nil
		}
		for _, o := range file.Peek(dir, base, maxScratchLooked) {
			if isScratchBeside(o.Key, "") {
				found = append(found, o)
			}
		}
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
			when = fmt.Sprintf(", written %s (%s)", report.Ago(now, o.ModTime), report.UTC(o.ModTime))
		}
		row("", o.Key+when)
	}
}

func utcOrEmpty(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return report.UTC(t)
}
