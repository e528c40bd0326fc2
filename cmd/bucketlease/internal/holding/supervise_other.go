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

// Run is not available here: there is no watchdog for this
// system yet, and running a command without one would not keep the
// lease's promise.
func (c *Command) Run(l *lease.Lease, sigs <-chan os.Signal, gone <-chan string, p *report.Printer) error {
	return errors.New("hold -- COMMAND needs a Unix system: there is no watchdog for this one")
}
