package cli

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/exitcode"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/put"
)

var verifyCommand = &command{
	name:    "verify",
	args:    "URL KEY --sha256 HEX | --size N [FLAGS]",
	summary: "check a stored object against a SHA-256 or a size",
	help: `Reads the object KEY under the URL's prefix (as get does, without writing it
anywhere) and checks it against --sha256 (64 hex digits, as sha256sum and put
print them) and/or --size (bytes). It prints "ok" with the size, SHA-256 and
version on stdout when everything given matches.

Exit codes:
  0    the object matches
  1    an error: the URL, the credentials, the service, the network, no such key
  2    a usage error (neither --sha256 nor --size)
  4    --version: the object has another version
  8    the object does not match: its size or SHA-256 is another

Examples:
  bucketlease verify file:///var/backups/db1 dumps/db1.sql --sha256 "$(sha256sum < db1.sql | cut -c1-64)"
  bucketlease verify 's3://my-bucket/backups/db1?region=eu-west-1' dumps/db1.sql --size 41943040`,
	setup: setupVerify,
}

func setupVerify(fs *flag.FlagSet) runFunc {
	var size int64
	sum := fs.String("sha256", "", "the SHA-256 the object must have (64 hex digits)")
	fs.Var(put.Size{N: &size}, "size", "the size in bytes the object must have")
	version, timeout := readFlags(fs)
	return func(ctx context.Context, e *env, args []string) error {
		pos, err := parseNoCommand(fs, args)
		if err != nil {
			return err
		}
		if len(pos) != 2 {
			return exitcode.Usagef("verify takes URL KEY and --sha256 HEX or --size N; got %d arguments", len(pos))
		}
		set := map[string]bool{}
		fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
		if !set["sha256"] && !set["size"] {
			return exitcode.Usagef("verify %s: give --sha256 HEX, --size N, or both", pos[1])
		}
		want := ""
		if set["sha256"] {
			if want, err = put.ParseSHA256(*sum); err != nil {
				return exitcode.Usagef("%v", err)
			}
		}
		rawURL, key := pos[0], pos[1]
		n, got, v, err := readWhole(ctx, "verify", rawURL, key, *timeout, *version, func(r io.Reader) (int64, error) {
			return io.Copy(io.Discard, r)
		})
		if err != nil {
			return err
		}
		if set["size"] && n != size {
			return exitcode.With(exitcode.Mismatch, fmt.Errorf("verify %s: the object is %d bytes, not --size %d: %w (version %s, sha256 %s)", key, n, size, put.ErrMismatch, v, got))
		}
		if want != "" && got != want {
			return exitcode.With(exitcode.Mismatch, fmt.Errorf("verify %s: the object's SHA-256 is %s, not --sha256 %s: %w (version %s, %d bytes)", key, got, want, put.ErrMismatch, v, n))
		}
		fmt.Fprintf(e.stdout, "ok %s: %d bytes, sha256 %s, version %s\n", key, n, got, v)
		return nil
	}
}
