package supervise

import (
	"errors"
	"io"
	"time"
)

// ErrProducerFailed is what Producer.Wait returns (through errors.Is)
// when the producer did not exit with status 0.
var ErrProducerFailed = errors.New("the producer failed")

// ProducerGrace is how long put gives its producer, and what it started,
// between SIGTERM and SIGKILL when it stops them.
const ProducerGrace = 5 * time.Second

// A StartError is a command that could not be started: Code is the exit
// code that says so, 127 if it was not found, else 126.
type StartError struct {
	Code int
	Err  error
}

func (e *StartError) Error() string { return e.Err.Error() }
func (e *StartError) Unwrap() error { return e.Err }

// Output is the producer's stdout. Stop closes it.
func (p *Producer) Output() io.Reader { return p.out }
