package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os/exec"
	"strings"
	"sync"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/supervise"
)

// Exit codes of put's checks on its input, and of verify.
const (
	// exitProducerFailed: put -- COMMAND: the producer exited non-zero
	// or was killed by a signal; the upload was aborted, nothing was
	// written.
	exitProducerFailed = 7
	// exitMismatch: put: the input did not match --size or --sha256, so
	// nothing was written; verify: the stored object does not match them.
	exitMismatch = 8
	// exitVersionLost: put: the object was stored, but its version could
	// not be written to stdout (closed, or full).
	exitVersionLost = 9
)

// errInputMismatch is what a put whose input did not match --size or
// --sha256 returns, and verify's mismatch (through errors.Is).
var errInputMismatch = errors.New("does not match")

// inputCheck is what put checks its input against before it commits:
// --size and --sha256 (each optional).
type inputCheck struct {
	size    int64  // the size --size names, if hasSize
	sha256  string // the SHA-256 --sha256 names, lower-case hex, or ""
	hasSize bool
}

// parseSHA256 checks a --sha256 value: 64 hex digits, either case.
func parseSHA256(s string) (string, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if b, err := hex.DecodeString(s); err != nil || len(b) != sha256.Size {
		return "", fmt.Errorf("--sha256 %q: want the 64 hex digits of a SHA-256, as sha256sum prints them", s)
	}
	return s, nil
}

// lookProducer finds the producer before anything is taken or written,
// and maps one that cannot run to the shell's codes, as hold does.
func lookProducer(name string) (string, error) {
	path, err := exec.LookPath(name)
	if err == nil {
		return path, nil
	}
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		return "", withCode(127, fmt.Errorf("put: the producer %q was not found: %w; nothing was written", name, err))
	}
	return "", withCode(126, fmt.Errorf("put: the producer %q cannot be run: %w; nothing was written", name, err))
}

// checkedReader is put's body: it counts and hashes what it passes on,
// and at the end of its input, before it says io.EOF (and so before the
// upload may commit), it waits for the producer and checks --size and
// --sha256. A producer that failed, or an input that does not match, is
// a read error: the upload is aborted and nothing is committed. It never
// returns io.ErrUnexpectedEOF, which an upload could take for a short last
// part.
type checkedReader struct {
	r     io.Reader
	key   string
	prod  *supervise.Producer // nil for FILE or stdin
	check inputCheck
	h     hash.Hash
	n     int64

	mu   sync.Mutex
	fail error // the sticky failure, once there is one
	done bool  // the input ended cleanly and passed the checks
}

func newCheckedReader(r io.Reader, key string, prod *supervise.Producer, check inputCheck) *checkedReader {
	return &checkedReader{r: r, key: key, prod: prod, check: check, h: sha256.New()}
}

func (c *checkedReader) Read(p []byte) (int, error) {
	if err := c.failure(); err != nil {
		return 0, err
	}
	if c.complete() {
		return 0, io.EOF
	}
	n, err := c.r.Read(p)
	if n > 0 {
		c.h.Write(p[:n])
		c.n += int64(n)
		if c.check.hasSize && c.n > c.check.size {
			return 0, c.setFail(fmt.Errorf("put %s: the input is longer than --size %d: %w; the upload was aborted, nothing was written", c.key, c.check.size, errInputMismatch))
		}
	}
	switch {
	case err == io.EOF:
		if ferr := c.finish(); ferr != nil {
			return n, ferr
		}
		return n, io.EOF
	case err != nil:
		if c.prod != nil {
			// The pipe from the producer failed: say how the producer ended.
			c.prod.Stop(supervise.ProducerGrace)
			if perr := c.prod.Wait(); perr != nil {
				return n, c.setFail(fmt.Errorf("put %s: %w; the upload was aborted, nothing was written", c.key, perr))
			}
		}
		if err == io.ErrUnexpectedEOF {
			err = errors.New("unexpected EOF")
		}
		return n, c.setFail(fmt.Errorf("put %s: reading the input: %w", c.key, err))
	}
	return n, nil
}

// finish runs at the end of the input: the producer's exit status, then
// the checks.
func (c *checkedReader) finish() error {
	if c.prod != nil {
		if err := c.prod.Wait(); err != nil {
			return c.setFail(fmt.Errorf("put %s: %w; the upload was aborted, nothing was written", c.key, err))
		}
	}
	if c.check.hasSize && c.n != c.check.size {
		return c.setFail(fmt.Errorf("put %s: the input ended after %d bytes, not --size %d: %w; the upload was aborted, nothing was written", c.key, c.n, c.check.size, errInputMismatch))
	}
	if sum := c.sum(); c.check.sha256 != "" && sum != c.check.sha256 {
		return c.setFail(fmt.Errorf("put %s: the input's SHA-256 is %s, not --sha256 %s: %w; the upload was aborted, nothing was written", c.key, sum, c.check.sha256, errInputMismatch))
	}
	c.mu.Lock()
	c.done = true
	c.mu.Unlock()
	return nil
}

func (c *checkedReader) setFail(err error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fail == nil {
		c.fail = err
	}
	return c.fail
}

// failure is the reader's failure, if it had one.
func (c *checkedReader) failure() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fail
}

func (c *checkedReader) complete() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.done
}

// sum is the SHA-256 of what was read, in hex.
func (c *checkedReader) sum() string { return hex.EncodeToString(c.h.Sum(nil)) }

// inputCode gives a put's error the exit code of its input's failure, if
// the input failed: exitProducerFailed, exitMismatch, or the producer's
// own lookup code.
func inputCode(body *checkedReader, err error) error {
	f := body.failure()
	switch {
	case f == nil:
		return err
	case errors.Is(f, supervise.ErrProducerFailed):
		return withCode(exitProducerFailed, f)
	case errors.Is(f, errInputMismatch):
		return withCode(exitMismatch, f)
	}
	return err
}
