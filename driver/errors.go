package driver

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The conditions a caller acts on. Drivers report them inside an *OpError
// (or any error that wraps them); callers test with errors.Is.
var (
	// ErrNotExist: Get of a key that does not exist.
	ErrNotExist = errors.New("object does not exist")

	// ErrPrecondition: the write's condition did not hold. It covers
	// IfAbsent on an existing key, IfMatch with another version, and IfMatch
	// on a missing key, whatever status code the service used.
	ErrPrecondition = errors.New("precondition failed")

	// ErrUnsupported: the service cannot express the requested condition.
	ErrUnsupported = errors.New("condition not supported by this service")

	// ErrBucketNotExist: the bucket (or container, or directory) itself does
	// not exist. It is never reported as ErrNotExist: a missing bucket is a
	// configuration error, and a lease must never read as free because its
	// bucket is missing.
	ErrBucketNotExist = errors.New("bucket does not exist")

	// ErrPermission: the service refused the request for want of
	// credentials or permission (HTTP 401 or 403, or the SDK's
	// authentication error).
	ErrPermission = errors.New("permission denied")

	// ErrOutcomeUnknown: a write may or may not have been applied, as when
	// the client library sent a conditional write again and a later
	// attempt was refused, perhaps for the first attempt's own write. The
	// caller reads the object back to learn what happened.
	ErrOutcomeUnknown = errors.New("outcome unknown: the write may have been applied")

	// ErrInvalidKey: the key is outside the portable key rule (see
	// CheckKey) or is one this driver cannot store, such as a key its
	// service would store under another name, or (on the file driver) a key
	// that is a prefix of a stored key. Nothing was sent.
	ErrInvalidKey = errors.New("invalid key")

	// ErrInvalidMetadata: the metadata of a write (PutOptions.Metadata) is
	// outside the portable rule (see Metadata.Validate). A driver that
	// declares Capabilities.Metadata refuses such a write before sending
	// anything (BeginPut does this), so nothing was written. It is not
	// ErrInvalidKey: the key may be fine.
	ErrInvalidMetadata = errors.New("invalid metadata")

	// ErrRateLimited: the service refused the request for its rate, not
	// its content (HTTP 429, or S3's 503 SlowDown), before applying it, as
	// the services document (a proxy that answers 429 after forwarding
	// would break this). The caller may send the request again after
	// RetryAfter; it is not a refusal of the write's condition.
	ErrRateLimited = errors.New("rate limited: the service refused the request for its rate, before applying it")
)

// RetryAfter returns how long the service asked the caller to wait before
// sending a rate-limited request again (its Retry-After), and true, where
// err wraps an *OpError of kind ErrRateLimited that carries one. It
// returns false for any other error and where the service named no time;
// the caller then waits Capabilities.KeyWriteInterval, or a second.
func RetryAfter(err error) (time.Duration, bool) {
	var oe *OpError
	if !errors.As(err, &oe) || oe.Kind != ErrRateLimited || oe.retryAfter <= 0 {
		return 0, false
	}
	return oe.retryAfter, true
}

// OpError is the error a driver returns from a failed operation. It keeps
// the classification (Kind) and the service's own error (Err) side by
// side, so both errors.Is(err, ErrPrecondition) and errors.As(err,
// &someSDKError) work.
type OpError struct {
	Driver string    // the driver's name, such as "s3"
	Op     string    // "get", "put" or "delete"
	Key    string    // the object key
	Cond   Condition // the condition of a put or delete
	Kind   error     // one of the sentinels above (ErrNotExist, ErrPrecondition, ...) or nil
	Err    error     // the underlying error, if any
	// retryAfter is, for Kind ErrRateLimited, the service's Retry-After,
	// or 0: Op.RateLimited sets it, RetryAfter reads it.
	retryAfter time.Duration
}

// printableKey is key as written where strconv.Quote would leave it as it
// is, and quoted otherwise: a key refused for a control character or bad
// UTF-8 must not reach a terminal or a log raw. A key holding a double
// quote is quoted too, which keeps where it ends plain.
func printableKey(key string) string {
	if q := strconv.Quote(key); q[1:len(q)-1] != key {
		return q
	}
	return key
}

// Error says what failed, on which key, under which condition, and why.
func (e *OpError) Error() string {
	var sb strings.Builder
	if e.Driver != "" {
		sb.WriteString(e.Driver)
		sb.WriteString(": ")
	}
	sb.WriteString(e.Op)
	sb.WriteString(" ")
	sb.WriteString(printableKey(e.Key))
	if e.Cond != (Condition{}) {
		sb.WriteString(" (")
		sb.WriteString(e.Cond.String())
		sb.WriteString(")")
	}
	if e.Kind != nil {
		sb.WriteString(": ")
		sb.WriteString(e.Kind.Error())
	}
	if e.retryAfter > 0 {
		sb.WriteString(" (retry after ")
		sb.WriteString(e.retryAfter.String())
		sb.WriteString(")")
	}
	if e.Err != nil {
		sb.WriteString(": ")
		sb.WriteString(e.Err.Error())
	}
	return sb.String()
}

// Unwrap returns the classification and the underlying error.
func (e *OpError) Unwrap() []error {
	errs := make([]error, 0, 2)
	if e.Kind != nil {
		errs = append(errs, e.Kind)
	}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}

// withContext returns err, joined with ctx's error when ctx has ended and
// err does not already match it. SDKs report a cancelled request in their
// own ways (a wrapped net error, a retry that gave up); Op.Fail passes the
// SDK's error through it so that errors.Is(err, context.Canceled)
// or context.DeadlineExceeded holds whatever the SDK made of it.
func withContext(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil && err != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w (%w)", err, cerr)
	}
	return err
}
