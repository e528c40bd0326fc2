package put

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/supervise"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/term"
)

// An Input is where put's body comes from: a file, stdin, or a producer
// run under the watchdog, and what it is checked against before the
// commit.
type Input struct {
	File     *os.File                        // the file to read, or nil for stdin (unless Argv)
	Argv     []string                        // the producer, or nil
	Path     string                          // the producer's program, looked up
	Self     string                          // this program, which runs the producer's watchdog ("": os.Executable)
	PIDNS    bool                            // the producer in a PID namespace where allowed
	Check    Check                           // what the input must match
	Stderr   io.Writer                       // the producer's stderr
	Count    func(io.Reader) io.Reader       // counts what is read (a Progress's Count), or nil
	SignalOf func(context.Context) os.Signal // the signal that ended a context, or nil

	prod *supervise.Producer
}

// Open returns the body, and the reader to upload (the body, counted); for
// a producer, it starts it. A producer that cannot start is a
// *supervise.StartError.
func (in *Input) Open(key string) (*Body, io.Reader, error) {
	var r io.Reader = os.Stdin
	switch {
	case in.Argv != nil:
		p, err := supervise.StartProducer(in.Self, in.Path, in.Argv, in.Stderr, in.PIDNS)
		if err != nil {
			return nil, nil, err
		}
		in.prod, r = p, p.Output()
	case in.File != nil:
		r = in.File
	}
	body := newBody(r, key, in.prod, in.Check)
	if in.Count == nil {
		return body, body, nil
	}
	return body, in.Count(body), nil
}

// Close stops a producer whose output was not all read (the put failed),
// and waits for it.
func (in *Input) Close() { in.prod.Stop(supervise.ProducerGrace) }

// Forward passes the signal that ended ctx, if one did, on to the
// producer.
func (in *Input) Forward(ctx context.Context) {
	if in.SignalOf == nil {
		return
	}
	if s := in.SignalOf(ctx); s != nil {
		in.prod.Signal(s)
	}
}

// A Progress reports the bytes read so far and the rate on a terminal.
type Progress struct {
	n     atomic.Int64
	done  chan struct{}
	ended chan struct{}
	once  atomic.Bool
}

// StartProgress starts reporting on w if it is a terminal; otherwise the
// progress reports nothing.
func StartProgress(w io.Writer, key string) *Progress {
	p := &Progress{done: make(chan struct{}), ended: make(chan struct{})}
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

// Count returns r counting what is read from it.
func (p *Progress) Count(r io.Reader) io.Reader { return &countingReader{r: r, n: &p.n} }

// Stop ends the report (its last line says the total) and waits for it.
func (p *Progress) Stop() {
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
