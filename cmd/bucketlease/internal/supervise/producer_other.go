//go:build !unix

package supervise

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// A Producer is put's COMMAND, run as put's direct child: no watchdog here.
type Producer struct {
	name string
	cmd  *exec.Cmd
	out  io.ReadCloser

	waitOnce sync.Once
	waitErr  error
}

// StartProducer starts argv (argv[0] found at path) with put's stdin and
// stderr, its stdout a pipe to put.
func StartProducer(_, path string, argv []string, stderr io.Writer, _ bool) (*Producer, error) {
	cmd := exec.Command(path, argv[1:]...)
	cmd.Args = argv
	cmd.Stdin = os.Stdin
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		code := 126
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			code = 127
		}
		return nil, &StartError{Code: code, Err: fmt.Errorf("put: the producer %q could not be started: %w; nothing was written", argv[0], err)}
	}
	return &Producer{name: argv[0], cmd: cmd, out: out}, nil
}

// Wait waits for the producer once, and says how it ended: nil for exit
// status 0, else an error wrapping ErrProducerFailed.
func (p *Producer) Wait() error {
	p.waitOnce.Do(func() {
		err := p.cmd.Wait()
		if err == nil {
			return
		}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				p.waitErr = fmt.Errorf("%w: %q was killed by signal %s", ErrProducerFailed, p.name, SignalName(ws.Signal()))
				return
			}
			p.waitErr = fmt.Errorf("%w: %q exited with status %d", ErrProducerFailed, p.name, ee.ExitCode())
			return
		}
		p.waitErr = fmt.Errorf("%w: waiting for %q: %v", ErrProducerFailed, p.name, err)
	})
	return p.waitErr
}

// Signal passes a signal put received on to the producer.
func (p *Producer) Signal(s os.Signal) {
	if p != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Signal(s)
	}
}

// Stop closes put's end of the producer's stdout, sends SIGTERM, then
// SIGKILL after grace, and returns once the producer has been waited for.
func (p *Producer) Stop(grace time.Duration) {
	if p == nil {
		return
	}
	p.out.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = p.Wait()
	}()
	select {
	case <-done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		_ = p.cmd.Process.Kill()
		<-done
	}
}
