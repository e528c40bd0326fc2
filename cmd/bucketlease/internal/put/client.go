package put

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/mushroomdb/bucketlease/driver"
)

// ErrInterrupted is what Upload returns (through errors.Is) when its
// context ended before hold answered: the body was cut off, and hold
// aborts the upload.
var ErrInterrupted = errors.New("interrupted before hold answered")

// A Client is one upload to the hold that serves put's socket.
type Client struct {
	conn *net.UnixConn
	h    Header
}

// Dial connects to the hold whose socket is sock and sends it h.
func Dial(sock string, h Header) (*Client, error) {
	conn, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("put: cannot reach the hold that started this command (%s=%s): %w", SocketEnv, sock, err)
	}
	hdr, err := jsonLine(h)
	if err != nil {
		conn.Close()
		return nil, err
	}
	if _, err := io.WriteString(conn, magic+" "+hdr); err != nil {
		conn.Close()
		return nil, fmt.Errorf("put: writing to hold: %w", err)
	}
	return &Client{conn: conn, h: h}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Upload opens in, streams it to hold, and returns what hold answered: the
// version stored (with a *LateError if hold answered "late"), or a
// *Error, or the input's own failure. If ctx ends first (a signal),
// it is forwarded to the producer and the body is cut off (hold aborts the
// upload); Upload returns the version if hold had committed all the same,
// and ErrInterrupted if not.
func (c *Client) Upload(ctx context.Context, in *Input) (driver.Version, *Body, error) {
	key := c.h.Key
	checked, body, err := in.Open(key)
	if err != nil {
		return "", nil, err
	}
	defer in.Close()
	replies := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(c.conn).ReadString('\n')
		replies <- line
	}()
	var bodyErr atomic.Value
	sent := sendBody(c.conn, body, &bodyErr)
	var line string
	select {
	case line = <-replies:
	case <-ctx.Done():
		in.Forward(ctx)
		// Cut the body off without its end chunk: hold aborts the
		// upload. Its answer still says whether it had committed.
		_ = c.conn.CloseWrite()
		line = <-replies
		if v, err := parseReply(key, line); v != "" {
			return v, checked, err // committed before the signal (late, if hold says so)
		}
		return "", checked, ErrInterrupted
	}
	v, err := parseReply(key, line)
	if v != "" {
		return v, checked, err // stored; err says if it was late
	}
	if err != nil {
		// The input's own failure was recorded before the body was cut
		// off, so before hold answered; asked now, before the deferred
		// close stops a producer that hold's refusal left running.
		if ierr := checked.Failed(); ierr != nil {
			return "", checked, ierr
		}
		if err, ok := bodyErr.Load().(error); ok {
			return "", checked, fmt.Errorf("%w; the upload was aborted, nothing was written", err)
		}
		return "", checked, err
	}
	<-sent // it sent the end chunk: its count and sum are final
	return v, checked, nil
}

// sendBody sends body to hold over conn in chunks, in the background, and
// ends it with the end chunk once body reaches EOF. A failure to read body
// is stored in bodyErr and ends the stream without the end chunk, so that
// hold aborts the upload. The channel returned is closed once it is done.
func sendBody(conn *net.UnixConn, body io.Reader, bodyErr *atomic.Value) <-chan struct{} {
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		buf := make([]byte, 1<<20)
		for {
			n, err := body.Read(buf)
			if n > 0 {
				if werr := writeChunk(conn, buf[:n]); werr != nil {
					return // hold stopped reading: its answer says why
				}
			}
			if err == io.EOF {
				// The end chunk: only now, after the producer's exit
				// status and the checks, may hold commit.
				if writeChunk(conn, nil) == nil {
					_ = conn.CloseWrite()
				}
				return
			}
			if err != nil {
				// No end chunk: hold aborts the upload.
				bodyErr.Store(err)
				_ = conn.CloseWrite()
				return
			}
		}
	}()
	return sent
}

// parseReply turns hold's answer to an upload of key into put's outcome.
func parseReply(key, line string) (driver.Version, error) {
	line = strings.TrimSuffix(line, "\n")
	for _, outcome := range []string{"ok ", "late "} {
		if rest, ok := strings.CutPrefix(line, outcome); ok {
			v, err := strconv.Unquote(rest)
			if err != nil {
				return "", fmt.Errorf("put %s: hold answered %q", key, line)
			}
			if outcome == "late " {
				return driver.Version(v), &LateError{Key: key, Version: driver.Version(v)}
			}
			return driver.Version(v), nil
		}
	}
	rest, ok := strings.CutPrefix(line, "error ")
	if !ok {
		return "", fmt.Errorf("put %s: hold closed the connection without an answer (it exited, or the lease ended); the upload, if it started, was aborted", key)
	}
	class, msg, _ := strings.Cut(rest, " ")
	return "", &Error{Class: class, Err: fmt.Errorf("put %s: %s", key, msg)}
}

// jsonLine is h as a line of JSON.
func jsonLine(h Header) (string, error) {
	b, err := json.Marshal(h)
	if err != nil {
		return "", err
	}
	return string(b) + "\n", nil
}
