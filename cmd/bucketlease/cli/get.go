package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/exitcode"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/internal/location"
)

var getCommand = &command{
	name:    "get",
	args:    "URL KEY [FILE|-] [FLAGS]",
	summary: "stream an object back byte for byte, to FILE (atomically) or stdout",
	help: `Reads the object KEY under the URL's prefix ({prefix}/KEY, the key put wrote)
and writes its bytes, exactly as they were stored, to FILE, or to stdout for -
or no FILE. It takes no lease: a read never needs one.

FILE is written atomically: the bytes go to a temporary file beside it, which
is synced and renamed over FILE only once the whole object was read, so FILE
is never partial (it keeps the mode of the file it replaces, else 0600). On
stdout, a read that fails midway leaves what was written: check the exit code.
The SHA-256 and size of what was written go to stderr.

With --version V, get refuses (exit 4, nothing written) if the object's
version, from the same response as its bytes, is not V.

Exit codes:
  0    written in full
  1    an error: the URL, the credentials, the service, the network, no such key, writing FILE
  2    a usage error
  4    --version: the object has another version; nothing was written

Examples:
  bucketlease get file:///var/backups/db1 dumps/db1.sql db1.sql
  bucketlease get 's3://my-bucket/backups/db1?region=eu-west-1' dumps/db1.sql - | psql db1
  bucketlease get file:///var/backups/db1 manifest.json --version "$VERSION"`,
	setup: setupGet,
}

func setupGet(fs *flag.FlagSet) runFunc {
	version, timeout := readFlags(fs)
	return func(ctx context.Context, e *env, args []string) error {
		pos, err := parseNoCommand(fs, args)
		if err != nil {
			return err
		}
		if len(pos) < 2 || len(pos) > 3 {
			return exitcode.Usagef("get takes URL KEY [FILE|-]; got %d arguments", len(pos))
		}
		rawURL, key, file := pos[0], pos[1], "-"
		if len(pos) == 3 {
			file = pos[2]
		}
		n, sum, v, err := readWhole(ctx, "get", rawURL, key, *timeout, *version, func(r io.Reader) (int64, error) {
			if file == "-" {
				return io.Copy(e.stdout, r)
			}
			return writeAtomically(file, r)
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "get %s: %d bytes, sha256 %s, version %s\n", key, n, sum, v)
		return nil
	}
}

// readFlags declares the flags of the commands that read an object (get
// and verify): --version and --timeout.
func readFlags(fs *flag.FlagSet) (version *string, timeout *time.Duration) {
	version = fs.String("version", "", "refuse (exit 4) unless the object's version is this one")
	timeout = timeoutFlag(fs, defaultTimeout, "give up if the service has not answered the read within this long (the body then streams as long as it takes)")
	return version, timeout
}

// readWhole reads KEY at rawURL to its end through consume, under a
// context that hold's signals cancel, and returns how many bytes consume
// took, their SHA-256 in hex, and the object's version. An object of
// another version than want (if set) is refused before it is read.
func readWhole(ctx context.Context, cmd, rawURL, key string, timeout time.Duration, want string, consume func(io.Reader) (int64, error)) (int64, string, driver.Version, error) {
	ctx, stop := signalContext(ctx, holdSignals()...)
	defer stop()
	rc, v, full, err := openObject(ctx, cmd, rawURL, key, timeout, want)
	if err != nil {
		return 0, "", "", err
	}
	defer rc.Close()
	h := sha256.New()
	n, err := consume(io.TeeReader(rc, h))
	if err != nil {
		return n, "", v, readFailed(ctx, cmd, key, full, err)
	}
	return n, hex.EncodeToString(h.Sum(nil)), v, nil
}

// readFailed says what a read by cmd (get or verify) that failed midway
// left behind.
func readFailed(ctx context.Context, cmd, key, full string, err error) error {
	if signalled(ctx) {
		code, why := interruptCode(ctx)
		return exitcode.With(code, fmt.Errorf("%s %s: %s: %w", cmd, key, why, err))
	}
	return fmt.Errorf("%s %s (%s): %w", cmd, key, full, err)
}

// openObject opens the bucket of rawURL (parsed here, once) and starts
// reading KEY under its prefix, for cmd (get or verify). timeout bounds
// the wait for the response, not the body. With want set, an object of
// another version is refused (exit 4) before a byte of it is read.
func openObject(ctx context.Context, cmd, rawURL, key string, timeout time.Duration, want string) (io.ReadCloser, driver.Version, string, error) {
	loc, err := location.Parse(rawURL)
	if err != nil {
		return nil, "", "", err
	}
	if strings.HasPrefix(key, "/") || key == "" {
		return nil, "", "", exitcode.Usagef("%s: a key is relative to the URL's prefix: not empty, no leading slash", key)
	}
	if err := refuseInProcess(cmd, loc); err != nil {
		return nil, "", "", err
	}
	b, err := openLocation(ctx, loc)
	if err != nil {
		return nil, "", "", err
	}
	prefix := loc.Prefix
	full := key
	if p := strings.TrimSuffix(prefix, "/"); p != "" {
		full = p + "/" + key
	}
	rctx, cancel := context.WithCancel(ctx)
	answered := make(chan struct{})
	go func() {
		t := time.NewTimer(timeout)
		defer t.Stop()
		select {
		case <-t.C:
			cancel()
		case <-answered:
		}
	}()
	rc, a, err := b.Get(rctx, full, driver.GetOptions{})
	v := a.Version
	close(answered)
	if err != nil {
		cancel()
		if errors.Is(err, driver.ErrNotExist) {
			return nil, "", "", explain(loc, fmt.Errorf("%s: no such object (%s): %w", key, full, err))
		}
		if ctx.Err() == nil && rctx.Err() != nil {
			return nil, "", "", fmt.Errorf("%s: no reply from %s within %v (--timeout) to a read (GET) of %s: %w", key, loc.String(), timeout, full, err)
		}
		return nil, "", "", explain(loc, fmt.Errorf("%s: %w", key, err))
	}
	if want != "" && string(v) != want {
		rc.Close()
		cancel()
		return nil, "", "", exitcode.With(exitcode.Refused, fmt.Errorf("%s %s: the object's version is %s, not --version %s; its body was not read, and nothing was written", cmd, key, v, want))
	}
	return &cancelCloser{rc, cancel}, v, full, nil
}

type cancelCloser struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelCloser) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// writeAtomically writes r to a temporary file beside path, syncs it and
// renames it over path; on any failure it removes the temporary file and
// leaves path as it was.
func writeAtomically(path string, r io.Reader) (n int64, err error) {
	mode := os.FileMode(0o600)
	if fi, err := os.Stat(path); err == nil {
		if !fi.Mode().IsRegular() {
			return 0, fmt.Errorf("%s is not a regular file", path)
		}
		mode = fi.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".bucketlease-get-*")
	if err != nil {
		return 0, err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if n, err = io.Copy(tmp, r); err != nil {
		return n, err
	}
	if err = tmp.Chmod(mode); err != nil {
		return n, err
	}
	if err = tmp.Sync(); err != nil {
		return n, err
	}
	if err = tmp.Close(); err != nil {
		return n, err
	}
	return n, os.Rename(tmp.Name(), path)
}
