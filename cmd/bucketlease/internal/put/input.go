package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/supervise"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/term"
)

// putInput is where put's body comes from: FILE, stdin, or a producer
// run after "--", and what it is checked against before the commit.
type putInput struct {
	file   string
	opened *os.File // FILE, opened
	argv   []string // the producer, or nil
	path   string   // the producer's program, looked up
	self   string   // this program, which runs the producer's watchdog ("": os.Executable)
	pidNS  bool     // the producer in a PID namespace where allowed
	check  inputCheck
	stderr io.Writer
	count  func(io.Reader) io.Reader // the progress's counter

	prod *supervise.Producer
}

// open returns the body; for a producer, it starts it.
func (in *putInput) open(key string) (*checkedReader, io.Reader, error) {
	var r io.Reader = os.Stdin
	switch {
	case in.argv != nil:
		p, err := supervise.StartProducer(in.self, in.path, in.argv, in.stderr, in.pidNS)
		var se *supervise.StartError
		if errors.As(err, &se) {
			err = withCode(se.Code, err)
		}
		if err != nil {
			return nil, nil, err
		}
		in.prod, r = p, p.Output()
	case in.opened != nil:
		r = in.opened
	}
	body := newCheckedReader(r, key, in.prod, in.check)
	return body, in.count(body), nil
}

// close stops a producer whose output was not all read (the put failed),
// and waits for it.
func (in *putInput) close() { in.prod.Stop(supervise.ProducerGrace) }

// forward passes the signal that ended ctx (a signalContext) on to the
// producer.
func (in *putInput) forward(ctx context.Context) {
	var sc signalCause
	if errors.As(context.Cause(ctx), &sc) {
		in.prod.Signal(sc.sig)
	}
}

// ignorePipeSignal makes a write to a closed stdout an error put reports
// (exit 9) rather than a death by SIGPIPE, unless SIGPIPE was ignored
// anyway.
func ignorePipeSignal() {
	if !signal.Ignored(syscall.SIGPIPE) {
		signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	}
}

// progress reports the bytes read so far and the rate on a terminal.
type progress struct {
	n     atomic.Int64
	done  chan struct{}
	ended chan struct{}
	once  atomic.Bool
}

// startProgress starts reporting on w if it is a terminal; otherwise the
// progress reports nothing.
func startProgress(w io.Writer, key string) *progress {
	p := &progress{done: make(chan struct{}), ended: make(chan struct{})}
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(f) {
		close(p.ended)
		return p
	}
	began := time.Now()
	go func() {
		defer close(p.ended)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		shown := false
		for {
			select {
			case <-p.done:
				if shown {
					fmt.Fprintf(f, "\rput %s: %s in %v\033[K\n", key, byteCount(p.n.Load()), time.Since(began).Round(100*time.Millisecond))
				}
				return
			case <-t.C:
				n, secs := p.n.Load(), time.Since(began).Seconds()
				fmt.Fprintf(f, "\rput %s: %s, %s/s\033[K", key, byteCount(n), byteCount(int64(float64(n)/secs)))
				shown = true
			}
		}
	}()
	return p
}

// count returns r counting what is read from it.
func (p *progress) count(r io.Reader) io.Reader { return &countingReader{r: r, n: &p.n} }

// stop ends the report (its last line says the total) and waits for it.
func (p *progress) stop() {
	if p.once.CompareAndSwap(false, true) {
		close(p.done)
	}
	<-p.ended
}

type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// byteCount says n bytes for people: 512 B, 12.3 MiB.
func byteCount(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}
