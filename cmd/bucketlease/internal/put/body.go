package put

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"sync"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/supervise"
)

// ErrMismatch is what a Body whose input did not match its Check fails
// with (through errors.Is).
var ErrMismatch = errors.New("does not match")

// A Check is what put checks its input against before it commits: a size
// and a SHA-256, each optional.
type Check struct {
	Size    int64  // the size the input must have, if HasSize
	SHA256  string // the SHA-256 the input must have, lower-case hex, or ""
	HasSize bool
}

// A Body is put's body: it counts and hashes what it passes on,
// and at the end of its input, before it says io.EOF (and so before the
// upload may commit), it waits for the producer and checks --size and
// --sha256 (its Check). A producer that failed, or an input that does not match, is
// a read error: the upload is aborted and nothing is committed. It never
// returns io.ErrUnexpectedEOF, which an upload could take for a short last
// part.
type Body struct {
	r     io.Reader
	key   string
	prod  *supervise.Producer // nil for FILE or stdin
	check Check
	h     hash.Hash
	n     int64

	mu   sync.Mutex
	fail error // the sticky failure, once there is one
	done bool  // the input ended cleanly and passed the checks
}

// newBody returns the body of key read from r, the output of prod (nil
// for a file or stdin), checked against check.
func newBody(r io.Reader, key string, prod *supervise.Producer, check Check) *Body {
	return &Body{r: r, key: key, prod: prod, check: check, h: sha256.New()}
}

// Read reads the input, and fails once it fails or does not match.
func (c *Body) Read(p []byte) (int, error) {
	if err := c.Failure(); err != nil {
		return 0, err
	}
	if c.complete() {
		return 0, io.EOF
	}
	n, err := c.r.Read(p)
	if n > 0 {
		c.h.Write(p[:n])
		c.n += int64(n)
		if c.check.HasSize && c.n > c.check.Size {
			return 0, c.setFail(fmt.Errorf("put %s: the input is longer than --size %d: %w; the upload was aborted, nothing was written", c.key, c.check.Size, ErrMismatch))
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
func (c *Body) finish() error {
	if c.prod != nil {
		if err := c.prod.Wait(); err != nil {
			return c.setFail(fmt.Errorf("put %s: %w; the upload was aborted, nothing was written", c.key, err))
		}
	}
	if c.check.HasSize && c.n != c.check.Size {
		return c.setFail(fmt.Errorf("put %s: the input ended after %d bytes, not --size %d: %w; the upload was aborted, nothing was written", c.key, c.n, c.check.Size, ErrMismatch))
	}
	if sum := c.Sum(); c.check.SHA256 != "" && sum != c.check.SHA256 {
		return c.setFail(fmt.Errorf("put %s: the input's SHA-256 is %s, not --sha256 %s: %w; the upload was aborted, nothing was written", c.key, sum, c.check.SHA256, ErrMismatch))
	}
	c.mu.Lock()
	c.done = true
	c.mu.Unlock()
	return nil
}

func (c *Body) setFail(err error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fail == nil {
		c.fail = err
	}
	return c.fail
}

// Failure is the body's failure, if it had one: the producer's (wrapping
// supervise.ErrProducerFailed), a mismatch (ErrMismatch), or reading the
// input.
func (c *Body) Failure() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fail
}

func (c *Body) complete() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.done
}

// Failed is the body's failure if it is the input's own: the producer
// failed (supervise.ErrProducerFailed) or the input did not match its
// Check (ErrMismatch); otherwise nil.
func (c *Body) Failed() error {
	f := c.Failure()
	if errors.Is(f, supervise.ErrProducerFailed) || errors.Is(f, ErrMismatch) {
		return f
	}
	return nil
}

// N is the number of bytes read.
func (c *Body) N() int64 { return c.n }

// Sum is the SHA-256 of what was read, in hex.
func (c *Body) Sum() string { return hex.EncodeToString(c.h.Sum(nil)) }
