package multipart

// UploadError is the cause inside the *OpError of a streamed write that
// failed: why it failed, and what became of what it had staged (an S3
// multipart upload, a GCS resumable session, the file driver's temporary
// file), so that the caller knows whether anything is left behind.
type UploadError struct {
	// Err is why the write failed: the context, the reader, MayStart, a
	// part, or the commit (a refused condition included).
	Err error
	// Staged reports whether anything had been staged when it failed.
	Staged bool
	// Aborted reports whether what was staged was removed before the call
	// returned. It is false when nothing was staged.
	Aborted bool
	// AbortErr is why the abort failed, when Staged and not Aborted. What
	// is left is removed by the service's own clean-up: on S3 a lifecycle
	// rule with AbortIncompleteMultipartUpload. It is nil, with Staged
	// and not Aborted, where the driver has no call that removes what was
	// staged, so no abort was sent: Azure's uncommitted blocks (Blob
	// Storage discards them 7 days after the blob's last Put Block, or
	// when the blob is next committed) and a GCS resumable session (the
	// client library cancels its requests but does not expose the session
	// to delete it; Cloud Storage discards it 7 days after it started).
	// Upload then says what becomes of it.
	AbortErr error
	// Upload names what was staged (an upload ID, a temporary file), if
	// anything was; where no abort could be sent, with what becomes of
	// it.
	Upload string
	// MayHaveCommitted reports that the commit was sent and no answer
	// said what the service did with it (a lost reply): the object may
	// have been committed, whatever the abort sent after it returned (S3
	// forgets an upload once it is completed or aborted alike, so an
	// abort that "succeeds" proves nothing). Aborted is then false; read
	// the object back to know.
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
