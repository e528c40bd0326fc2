package cli

import (
	"io"
	"time"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/bounded"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/holding"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/report"
	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/internal/location"
	"github.com/mushroomdb/bucketlease/lease"
)

// withDeadlines is bounded.New, under the name the put commands call.
func withDeadlines(b driver.Bucket, d time.Duration, loc *location.Location, bound string) driver.Bucket {
	return bounded.New(b, d, loc, bound)
}

// requestTimeout is the bound on each of hold's requests: a third of the
// TTL. A renewal that takes longer has missed its turn anyway (the next is
// due), and the fence, two thirds of a TTL after the last renewal, leaves
// room for two such attempts.
func requestTimeout(ttl time.Duration) time.Duration { return ttl / 3 }

// defaultTimeout is show's and break's default --timeout.
const defaultTimeout = 30 * time.Second

// printer is a report.Printer made from its settings when it is first
// used: hold's events, and put URL's.
type printer struct {
	w             io.Writer
	json, verbose bool
	*report.Printer
}

// init makes the report.Printer, once.
func (p *printer) init() *report.Printer {
	if p.Printer == nil {
		p.Printer = report.NewPrinter(p.w, p.json, p.verbose)
	}
	return p.Printer
}

func (p *printer) start()                { p.init().Start() }
func (p *printer) close(d time.Duration) { p.init().Close(d) }
func (p *printer) event(ev lease.Event)  { p.init().Event(ev) }
func (p *printer) exit(err error)        { p.init().Exit(err) }

// releaseAfter releases the lease after result (holding.Release), with
// the driver's hints on a failure.
func releaseAfter(l *lease.Lease, loc *location.Location, b driver.Bucket, prefix string, p *printer, result error) error {
	return holding.Release(l, loc, b, prefix, p.init(), result, func(err error) error { return explain(loc, err) })
}
