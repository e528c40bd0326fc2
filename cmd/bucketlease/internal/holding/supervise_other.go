//go:build !unix

package cli

import (
	"errors"
	"os"
	"syscall"
	"time"

	"github.com/mushroomdb/bucketlease/lease"
)

const (
	// commandSupported: there is no watchdog for this system yet.
	commandSupported = false
	sigQuit          = syscall.SIGQUIT
)

// superviseCommand is not available here: there is no watchdog for this
// system yet, and running a command without one would not keep the
// lease's promise.
func superviseCommand(e *env, l *lease.Lease, k *keeper, path string, argv []string, sigs <-chan os.Signal, gone <-chan string, grace time.Duration, pidNS bool, p *printer) error {
	return errors.New("hold -- COMMAND needs a Unix system: there is no watchdog for this one")
}
