//go:build !unix

package holding

import (
	"errors"
	"os"
	"syscall"
	"time"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/report"
	"github.com/mushroomdb/bucketlease/lease"
)

const (
	// CommandSupported: there is no watchdog for this system yet.
	CommandSupported = false
	// SigQuit is SIGQUIT, one of the signals hold passes on.
	SigQuit = syscall.SIGQUIT
)

// A Command is what hold would run under the lease through a watchdog.
type Command struct {
	Self         string
	Path         string
	Argv         []string
	Grace        time.Duration
	PIDNamespace bool
	Pause        func()
	Resume       func()
}

// Run is not available here: without a watchdog the lease's promise
// could not be kept.
func (c *Command) Run(l *lease.Lease, sigs <-chan os.Signal, gone <-chan string, p *report.Printer) error {
	return errors.New("hold -- COMMAND needs a Unix system: there is no watchdog for this one")
}
