package multipart

// UploadError is the cause inside the *OpError of a failed streamed write:
// why it failed, and whether what it staged is left behind.
type UploadError struct {
	// Err is why the write failed: the context, the reader, MayStart, a
	// part, or the commit (a refused condition included).
	Err error
	// Staged reports whether anything had been staged when it failed.
	Staged bool
	// Aborted reports whether what was staged was removed before the call
	// returned. It is false when nothing was staged.
	Aborted bool
	// AbortErr is why the abort failed, when Staged and not Aborted; the
	// service's own clean-up removes what is left. It is nil there where
	// the driver has no abort call (Azure's blocks, a GCS session), and
	// Upload says what becomes of it.
	AbortErr error
	// Upload names what was staged (an upload ID, a temporary file), if
	// anything was; where no abort could be sent, with what becomes of
	// it.
	Upload string
	// MayHaveCommitted reports that the commit got no answer, so the
	// object may have been committed whatever the abort returned (S3
	// forgets completed and aborted uploads alike). Aborted is then false.
	MayHaveCommitted bool
}

// Error says why the write failed and what became of the staged upload.
func (e *UploadError) Error() string {
	msg := "<nil>"
	if e.Err != nil {
		msg = e.Err.Error()
	}
	switch {
	case e.MayHaveCommitted:
		return msg + "; its commit (of " + e.Upload + ") got no answer, so the object may have been committed, whatever the abort sent after it returned: read the object back"
	case !e.Staged:
		return msg + "; nothing had been staged"
	case e.Aborted:
		return msg + "; what it had staged (" + e.Upload + ") was aborted"
	case e.AbortErr != nil:
		return msg + "; aborting what it had staged (" + e.Upload + ") failed too (" + e.AbortErr.Error() +
			"), so it is left to the service's clean-up (see UploadError.AbortErr)"
	default:
		return msg + "; no abort was sent, the driver having no call that removes what it had staged: " + e.Upload
	}
}

// Unwrap returns the cause and the abort's error.
func (e *UploadError) Unwrap() []error {
	var errs []error
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	if e.AbortErr != nil {
		errs = append(errs, e.AbortErr)
	}
	return errs
}
