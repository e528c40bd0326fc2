package put

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/exitcode"
	"github.com/mushroomdb/bucketlease/driver"
)

// Flags are put's flags that shape the write: its condition and its parts.
type Flags struct {
	IfAbsent, Overwrite bool
	IfMatch             string
	PartSize            int64
	Concurrency         int
}

// Header checks the flags, given as set names, and returns the header
// they ask for.
func (f *Flags) Header(set map[string]bool) (Header, error) {
	n := 0
	for _, c := range []string{"if-absent", "if-match", "overwrite"} {
		if set[c] {
			n++
		}
	}
	switch {
	case n > 1:
		return Header{}, exitcode.Usagef("put: --if-absent, --if-match and --overwrite exclude each other")
	case set["if-match"] && f.IfMatch == "":
		return Header{}, exitcode.Usagef("put: --if-match needs a version, as a previous put printed it")
	case f.PartSize < 0 || (f.PartSize > 0 && f.PartSize < driver.MinPartSize):
		return Header{}, exitcode.Usagef("--part-size %d: a part is at least 5MiB (%d bytes)", f.PartSize, driver.MinPartSize)
	case f.PartSize > 5<<30:
		return Header{}, exitcode.Usagef("--part-size %d: a part is at most 5GiB", f.PartSize)
	case set["concurrency"] && (f.Concurrency < 1 || f.Concurrency > 256):
		return Header{}, exitcode.Usagef("--concurrency %d: 1 to 256", f.Concurrency)
	case f.Concurrency > 256:
		return Header{}, exitcode.Usagef("--concurrency %d: 1 to 256", f.Concurrency)
	}
	h := Header{Cond: "if-absent", PartSize: cmp.Or(f.PartSize, DefaultPartSize), Concurrency: cmp.Or(f.Concurrency, DefaultConcurrency)}
	switch {
	case set["if-match"]:
		h.Cond, h.Version = "if-match", f.IfMatch
	case f.Overwrite:
		h.Cond = "overwrite"
	}
	return h, nil
}

// ParseSHA256 checks a --sha256 value: 64 hex digits, either case.
func ParseSHA256(s string) (string, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if b, err := hex.DecodeString(s); err != nil || len(b) != sha256.Size {
		return "", fmt.Errorf("--sha256 %q: want the 64 hex digits of a SHA-256, as sha256sum prints them", s)
	}
	return s, nil
}

// LookProducer finds the producer before anything is taken or written,
// and maps one that cannot run to the shell's codes, as hold does.
func LookProducer(name string) (string, error) {
	path, err := exec.LookPath(name)
	if err == nil {
		return path, nil
	}
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		return "", exitcode.With(127, fmt.Errorf("put: the producer %q was not found: %w; nothing was written", name, err))
	}
	return "", exitcode.With(126, fmt.Errorf("put: the producer %q cannot be run: %w; nothing was written", name, err))
}

// Size is a byte size flag: 5242880, 5MiB, 64M, 1GiB.
type Size struct{ N *int64 }

// String is the size in bytes, or "" for none.
func (v Size) String() string {
	if v.N == nil || *v.N == 0 {
		return ""
	}
	return strconv.FormatInt(*v.N, 10)
}

// Set parses s.
func (v Size) Set(s string) error {
	num, mult := strings.TrimSpace(s), int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}} {
		if rest, ok := strings.CutSuffix(num, u.suffix); ok {
			num, mult = rest, u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > (1<<40)/mult {
		return fmt.Errorf("%q is not a size: write bytes or a number with KiB, MiB or GiB, such as 16MiB", s)
	}
	*v.N = n * mult
	return nil
}

// IgnorePipeSignal makes a write to a closed stdout an error put reports
// (exit 9) rather than a death by SIGPIPE, unless SIGPIPE was ignored
// anyway.
func IgnorePipeSignal() {
	if !signal.Ignored(syscall.SIGPIPE) {
		signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	}
}
