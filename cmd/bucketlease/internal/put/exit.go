package put

import (
	"errors"

	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/exitcode"
	"github.com/mushroomdb/bucketlease/cmd/bucketlease/internal/supervise"
)

// Exit gives an error of this package the exit code of its outcome: a
// late write's, a class's (ClassExit), a producer's that could not start,
// or the input's own failure's (exitcode.ProducerFailed, exitcode.Mismatch).
func Exit(err error) error {
	var (
		late  *LateError
		class *Error
		start *supervise.StartError
	)
	switch {
	case err == nil:
		return nil
	case errors.As(err, &late):
		return exitcode.With(exitcode.StoredLate, err)
	case errors.As(err, &class):
		return ClassExit(class.Class, err)
	case errors.As(err, &start):
		return exitcode.With(start.Code, err)
	case errors.Is(err, supervise.ErrProducerFailed):
		return exitcode.With(exitcode.ProducerFailed, err)
	case errors.Is(err, ErrMismatch):
		return exitcode.With(exitcode.Mismatch, err)
	}
	return err
}

// ClassExit gives err the exit code of its class.
func ClassExit(class string, err error) error {
	switch class {
	case ClassPrecondition:
		return exitcode.With(exitcode.Refused, err)
	case ClassFenced:
		return exitcode.With(exitcode.LeaseEnded, err)
	case ClassUsage:
		return exitcode.With(exitcode.Usage, err)
	}
	return err
}
