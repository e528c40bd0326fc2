package exitcode

import (
	"errors"
	"flag"
	"fmt"
)

// The exit codes, as "bucketlease help" lists them.
const (
	OK             = 0   // success
	Failure        = 1   // something failed: the service, the URL, the network
	Usage          = 2   // the command line is wrong
	Held           = 3   // another instance holds the lease
	Refused        = 4   // break, put, get, verify refused; nothing was written
	ProbeFailed    = 5   // the service does not give the exclusion declared, or ignores preconditions
	InstanceInUse  = 6   // a fresh lease names this instance id but this process did not write it
	ProducerFailed = 7   // put's producer exited non-zero or was killed; nothing was written
	Mismatch       = 8   // put's input, or verify's object, did not match --size or --sha256
	VersionLost    = 9   // put stored the object, but could not write its version to stdout
	Late           = 10  // list --late found late writes
	StoredLate     = 11  // put stored the object, but its answer came after the fence
	LeaseEnded     = 124 // the lease was lost or fenced while held
	ReleaseFailed  = 125 // the lease could not be released
	Interrupted    = 130 // interrupted by a signal that cannot be named
)

// An Error is an error with the exit code it ends the process with. A nil
// Err exits silently.
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// With wraps err with an exit code.
func With(code int, err error) error { return &Error{Code: code, Err: err} }

// Usagef reports a wrong command line (exit 2).
func Usagef(format string, args ...any) error {
	return With(Usage, fmt.Errorf(format, args...))
}

// Of returns the exit code for err and whether to print err.
func Of(err error) (code int, show bool) {
	var ee *Error
	switch {
	case err == nil:
		return OK, false
	case errors.Is(err, flag.ErrHelp):
		return OK, false
	case errors.As(err, &ee):
		return ee.Code, ee.Err != nil
	default:
		return Failure, true
	}
}
