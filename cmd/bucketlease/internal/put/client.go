package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/mushroomdb/bucketlease/driver"
)

// putViaHold streams the body to the hold whose socket is sock and returns
// what it answered. A signal (SIGINT, SIGTERM, SIGHUP) goes on to the
// producer, cuts the body off (hold aborts the upload), and put exits
// 128+N.
func putViaHold(ctx context.Context, sock string, h putHeader, in *putInput) (driver.Version, *checkedReader, error) {
	conn, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		return "", nil, fmt.Errorf("put: cannot reach the hold that started this command (%s=%s): %w", putSocketEnv, sock, err)
	}
	defer conn.Close()
	hdr, err := jsonLine(h)
	if err != nil {
		return "", nil, err
	}
	if _, err := io.WriteString(conn, putMagic+" "+hdr); err != nil {
		return "", nil, fmt.Errorf("put: writing to hold: %w", err)
	}
	sigCtx, stopSignals := signalContext(ctx, holdSignals()...)
	defer stopSignals()
	checked, body, err := in.open(h.Key)
	if err != nil {
		return "", nil, err
	}
	defer in.close()
	replies := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(conn).ReadString('\n')
		replies <- line
	}()
	var bodyErr atomic.Value
	sent := sendBody(conn, body, &bodyErr)
	var line string
	select {
	case line = <-replies:
	case <-sigCtx.Done():
		in.forward(sigCtx)
		// Cut the body off without its end chunk: hold aborts the
		// upload. Its answer still says whether it had committed.
		_ = conn.CloseWrite()
		line = <-replies
		if v, err := parseReply(h.Key, line); v != "" {
			return v, checked, err // committed before the signal (late, if hold says so)
		}
		code, why := interruptCode(sigCtx)
		return "", checked, withCode(code, fmt.Errorf("put %s: %s: the upload was aborted, nothing was written", h.Key, why))
	}
	v, err := parseReply(h.Key, line)
	if v != "" {
		return v, checked, err // stored; err says if it was late
	}
	if err != nil {
		// The input's own failure was recorded before the body was cut
		// off, so before hold answered; asked now, before the deferred
		// close stops a producer that hold's refusal left running.
		if ierr := inputCode(checked, nil); ierr != nil {
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

// parseReply turns hold's answer into put's outcome.
func parseReply(key, line string) (driver.Version, error) {
	line = strings.TrimSuffix(line, "\n")
	for _, outcome := range []string{"ok ", "late "} {
		if rest, ok := strings.CutPrefix(line, outcome); ok {
			v, err := strconv.Unquote(rest)
			if err != nil {
				return "", fmt.Errorf("put %s: hold answered %q", key, line)
			}
			if outcome == "late " {
				return driver.Version(v), storedLate(key, driver.Version(v))
			}
			return driver.Version(v), nil
		}
	}
	rest, ok := strings.CutPrefix(line, "error ")
	if !ok {
		return "", fmt.Errorf("put %s: hold closed the connection without an answer (it exited, or the lease ended); the upload, if it started, was aborted", key)
	}
	class, msg, _ := strings.Cut(rest, " ")
	return "", putError(class, fmt.Errorf("put %s: %s", key, msg))
}

func jsonLine(h putHeader) (string, error) {
	b, err := json.Marshal(h)
	if err != nil {
		return "", err
	}
	return string(b) + "\n", nil
}
