package put

import (
	"bufio"
	"context"
	byteorder "encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/lease"
)

// SocketEnv names the Unix socket through which "bucketlease put KEY",
// run by hold's command, streams an object under hold's lease.
const SocketEnv = "BUCKETLEASE_PUT_SOCKET"

// The put protocol, one upload per connection, on a Unix socket in a
// private (0700) directory that hold creates after it has taken the lease
// and removes at exit:
//
//  1. the client sends one header line: magic, a space, a JSON Header,
//     "\n";
//  2. then the body as chunks, each a 4-byte big-endian length and that
//     many bytes, ended by a chunk of length 0; then it half-closes. The
//     end chunk is what tells a complete body from a client that died (or
//     was killed at the fence) mid-body: a connection that ends without it
//     is an aborted upload, never a truncated object;
//  3. hold streams the body through Lease.Bucket with its PutStream
//     (so it is refused, cancelled and aborted at the fence, and Release
//     waits for it) and answers one line: "ok VERSION" (VERSION quoted as
//     Go quotes strings), "late VERSION" (stored, but answered after the
//     fence: a LateError) or "error CLASS MESSAGE", CLASS one of the
//     classes below. hold may answer early (an error) without reading
//     the rest of the body.
const magic = "bucketlease-put/1"

// A Header is what the client asks for: the key, its condition, and the
// upload's part size and concurrency (0: the driver's defaults).
type Header struct {
	Key         string `json:"key"`
	Cond        string `json:"cond"` // "if-absent", "if-match" or "overwrite"
	Version     string `json:"version,omitempty"`
	PartSize    int64  `json:"part_size,omitempty"`
	Concurrency int    `json:"concurrency,omitempty"`
}

// The classes of a refused or failed put, as hold answers them.
const (
	ClassPrecondition = "precondition" // the condition did not hold
	ClassFenced       = "fenced"       // the lease was fenced, lost or released
	ClassUsage        = "usage"        // a bad key or header
	ClassError        = "error"        // anything else
)

// An Error is a put that hold refused or that failed, with its class.
type Error struct {
	Class string
	Err   error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// maxChunk bounds one chunk of the body, so that a garbled length is an
// error rather than an allocation.
const maxChunk = 16 << 20

// Condition returns the header's condition.
func (h Header) Condition() (driver.Condition, error) {
	switch h.Cond {
	case "", "if-absent":
		return driver.IfAbsent(), nil
	case "if-match":
		if h.Version == "" {
			return driver.Condition{}, errors.New("if-match needs a version")
		}
		return driver.IfMatch(driver.Version(h.Version)), nil
	case "overwrite":
		return driver.Condition{}, nil
	}
	return driver.Condition{}, fmt.Errorf("unknown condition %q", h.Cond)
}

// Serve serves put's socket for l's holder: it creates the socket in a
// private directory, puts its path in this process's environment (which
// hold's command inherits, and nothing outside hold's tree), and returns
// the function that stops serving, waits for the uploads in flight,
// removes the directory and the variable. Hold calls it once it holds the
// lease and before it starts its command, and defers the stop.
func Serve(l *lease.Lease) (stop func(), err error) {
	dir, err := os.MkdirTemp("", "bucketlease-put-")
	if err != nil {
		return nil, fmt.Errorf("put's socket: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("put's socket: %w", err)
	}
	path := filepath.Join(dir, "put.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("put's socket: %w", err)
	}
	ln.SetUnlinkOnClose(true)
	prev, hadPrev := os.LookupEnv(SocketEnv)
	os.Setenv(SocketEnv, path)
	ctx, cancel := context.WithCancel(context.Background())
	s := &server{l: l, ctx: ctx}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := ln.AcceptUnix()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.serve(conn)
			}()
		}
	}()
	return func() {
		ln.Close()
		cancel() // an upload still in flight is cut off and aborted
		wg.Wait()
		os.RemoveAll(dir)
		if hadPrev {
			os.Setenv(SocketEnv, prev)
		} else {
			os.Unsetenv(SocketEnv)
		}
	}, nil
}

// A server runs the uploads that hold's put clients send it.
type server struct {
	l   *lease.Lease
	ctx context.Context // ends when hold stops serving
}

// serve runs one upload and answers it.
func (s *server) serve(conn *net.UnixConn) {
	defer conn.Close()
	br := bufio.NewReaderSize(conn, 64<<10)
	line, err := br.ReadString('\n')
	if err != nil {
		return // nothing was asked
	}
	var h Header
	rest, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), magic+" ")
	if !ok {
		writeReply(conn, ClassUsage, fmt.Sprintf("not a %s header", magic))
		return
	}
	if err := json.Unmarshal([]byte(rest), &h); err != nil {
		writeReply(conn, ClassUsage, "bad header: "+err.Error())
		return
	}
	cond, err := h.Condition()
	if err != nil {
		writeReply(conn, ClassUsage, err.Error())
		return
	}
	// A body that stalls (the client waits on its own input) is cut off
	// at the fence: the read ends, and PutStream aborts.
	fctx, cancel := s.l.Fence(s.ctx)
	defer cancel()
	stopAfter := context.AfterFunc(fctx, func() { _ = conn.SetReadDeadline(time.Now()) })
	defer stopAfter()
	if err := RefuseExisting(fctx, s.l.Bucket().Driver(), h.Key, cond); err != nil {
		writeReply(conn, Classify(s.l, err), err.Error())
		return
	}
	a, err := s.l.Bucket().Driver().PutStream(fctx, h.Key, &chunkReader{r: br}, driver.PutOptions{If: cond},
		&driver.StreamOptions{PartSize: h.PartSize, Concurrency: h.Concurrency})
	v, late, err := Settle(s.ctx, s.l, h.Key, a.Version, err)
	if err != nil {
		writeReply(conn, Classify(s.l, err), err.Error())
		return
	}
	if late {
		fmt.Fprintf(conn, "late %s\n", strconv.Quote(string(v))) // stored, answered after the fence: a LateError
		return
	}
	fmt.Fprintf(conn, "ok %s\n", strconv.Quote(string(v)))
}

// Classify returns the class of a failed upload under l.
func Classify(l *lease.Lease, err error) string {
	switch {
	case errors.Is(err, driver.ErrPrecondition):
		return ClassPrecondition
	case errors.Is(err, lease.ErrFenced), errors.Is(err, lease.ErrLost), errors.Is(err, lease.ErrReleased), !l.MayWrite():
		return ClassFenced
	case errors.Is(err, driver.ErrInvalidKey):
		return ClassUsage
	}
	return ClassError
}

func writeReply(w io.Writer, class, msg string) {
	fmt.Fprintf(w, "error %s %s\n", class, strings.ReplaceAll(msg, "\n", " "))
}

// chunkReader reads the chunked body of the put protocol.
type chunkReader struct {
	r    *bufio.Reader
	left uint32
	done bool
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if c.done {
		return 0, io.EOF
	}
	if c.left == 0 {
		var n [4]byte
		if _, err := io.ReadFull(c.r, n[:]); err != nil {
			return 0, truncated(err)
		}
		c.left = byteorder.BigEndian.Uint32(n[:])
		if c.left == 0 {
			c.done = true
			return 0, io.EOF
		}
		if c.left > maxChunk {
			return 0, fmt.Errorf("a chunk of %d bytes, more than %d: not a put client", c.left, maxChunk)
		}
	}
	if uint32(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= uint32(n)
	if err != nil {
		return n, truncated(err)
	}
	return n, nil
}

// truncated is the error of a body that ended without its end chunk.
func truncated(err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return errors.New("the put client went away before the end of the body (killed, or its input failed); the upload is aborted")
	}
	return fmt.Errorf("reading the body from the put client: %w", err)
}

// writeChunk writes one chunk of the body (an empty p is the end chunk).
func writeChunk(w io.Writer, p []byte) error {
	var n [4]byte
	byteorder.BigEndian.PutUint32(n[:], uint32(len(p)))
	if _, err := w.Write(n[:]); err != nil {
		return err
	}
	if len(p) == 0 {
		return nil
	}
	_, err := w.Write(p)
	return err
}
