package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	s3sdk "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/mushroomdb/bucketlease/driver"
	"github.com/mushroomdb/bucketlease/driver/internal/httpdate"
	"github.com/mushroomdb/bucketlease/driver/internal/metadata"
	"github.com/mushroomdb/bucketlease/driver/internal/s3proto"
	"github.com/mushroomdb/bucketlease/driver/internal/settle"
)

// MaxPutSize is the largest body Put sends: S3's limit for a single PUT.
// A larger body is refused rather than split into a multipart upload, whose
// parts would not carry the precondition.
const MaxPutSize = 5 << 30

// Profile is what distinguishes one S3-compatible service from another
// for this driver.
type Profile struct {
	// Driver names the driver in errors, such as "s3" or "r2".
	Driver string
	// ConditionalDelete reports whether the service honours If-Match on
	// DeleteObject. Where it is false, Delete refuses IfMatch with
	// driver.ErrUnsupported without sending a request.
	ConditionalDelete bool
	// KeyWriteInterval is the spacing between writes to one key the
	// service enforces (driver.Capabilities.KeyWriteInterval).
	KeyWriteInterval time.Duration
}

// AWS is the profile of Amazon S3: conditional writes and deletes. The
// conditional delete is declared only for AWS itself, not a custom
// endpoint, which may ignore If-Match on DeleteObject.
var AWS = Profile{Driver: Scheme, ConditionalDelete: true}

// Bucket is one bucket reached through the AWS SDK's S3 client. It is safe
// for concurrent use.
type Bucket struct {
	// client carries streamed writes and listings, ctl Get, Put and
	// Delete; one client for a client passed to New.
	client  *s3sdk.Client
	ctl     *s3sdk.Client
	bucket  string
	profile Profile
	caps    driver.Capabilities
	// conns are the connections of the client OpenWithProfile made, which
	// Close closes; nil for a client passed to New, which stays its
	// caller's.
	conns *conns
}

// Close closes the connections of the clients OpenWithProfile made, once
// no operation is in flight; for a caller's client it does nothing. It
// returns nil.
func (b *Bucket) Close() error {
	if b.conns != nil {
		b.conns.closeAll()
	}
	return nil
}

var _ driver.Bucket = (*Bucket)(nil)

// New returns the bucket named bucket on client, with the AWS profile. The
// client is the caller's: its region, endpoint, credentials and retry policy
// are used as they are.
func New(client *s3sdk.Client, bucket string) *Bucket {
	return NewWithProfile(client, bucket, AWS)
}

// NewWithProfile is New for an S3-compatible service described by p. A
// conditional delete is declared only if p declares one and the client
// reaches AWS itself (no endpoint, or one under amazonaws.com).
func NewWithProfile(client *s3sdk.Client, bucket string, p Profile) *Bucket {
	if p.Driver == "" {
		p.Driver = Scheme
	}
	caps := driver.Capabilities{Exclusion: driver.Conditional,
		ConditionalDelete: p.ConditionalDelete && (client == nil || IsAWSEndpoint(aws.ToString(client.Options().BaseEndpoint))),
		KeyWriteInterval:  p.KeyWriteInterval, Metadata: true}
	return &Bucket{client: client, ctl: client, bucket: bucket, profile: p, caps: caps}
}

// IsAWSEndpoint reports whether endpoint, a client's base endpoint, is AWS
// S3 itself: empty (the SDK's own resolution) or an https URL whose host is
// under amazonaws.com or amazonaws.com.cn.
func IsAWSEndpoint(endpoint string) bool {
	if endpoint == "" {
		return true
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme != "https" {
		return false
	}
	h := strings.ToLower(u.Hostname())
	return strings.HasSuffix(h, ".amazonaws.com") || strings.HasSuffix(h, ".amazonaws.com.cn")
}

// Capabilities declares Conditional exclusion, metadata (not
// ListMetadata), and a conditional Delete where the profile allows it.
func (b *Bucket) Capabilities() driver.Capabilities { return b.caps }

// Get returns the object's body and its Attrs (the ETag, the service's
// time and, under opts.Metadata, the x-amz-meta-* headers) from one
// GetObject response.
func (b *Bucket) Get(ctx context.Context, key string, opts driver.GetOptions) (io.ReadCloser, driver.Attrs, error) {
	op, err := driver.BeginGet(ctx, b.profile.Driver, key)
	if err != nil {
		return nil, driver.Attrs{}, err
	}
	out, err := b.ctl.GetObject(op.Context(), &s3sdk.GetObjectInput{Bucket: &b.bucket, Key: &key})
	if err != nil {
		return nil, driver.Attrs{Time: serviceTime(nil, err, nil)}, fail(op, kind(err, driver.Condition{}), err)
	}
	a := driver.Attrs{Version: driver.Version(aws.ToString(out.ETag)), Time: serviceTime(&out.ResultMetadata, nil, out.LastModified)}
	if a.Version == "" {
		out.Body.Close()
		return nil, driver.Attrs{Time: a.Time}, op.Fail(nil, errors.New("the response carried no ETag, so the object's version is unknown"))
	}
	if opts.Metadata {
		a.Metadata = metadata.Lower(out.Metadata)
	}
	return out.Body, a, nil
}

// Put stores data under key with one PutObject request carrying opts.If
// as If-None-Match: * or If-Match: ETag, and opts.Metadata as
// x-amz-meta-* headers, and returns the new ETag and the service's time.
func (b *Bucket) Put(ctx context.Context, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	return b.put(ctx, b.ctl, key, data, opts)
}

// put is Put through client: b.ctl for Put, b.client for a streamed write
// that fits one part.
func (b *Bucket) put(ctx context.Context, client *s3sdk.Client, key string, data []byte, opts driver.PutOptions) (driver.Attrs, error) {
	op, err := driver.BeginPut(ctx, b.caps, b.profile.Driver, key, opts)
	if err != nil {
		return driver.Attrs{}, err
	}
	if len(data) > MaxPutSize {
		return driver.Attrs{}, op.Fail(nil, fmt.Errorf("body of %d bytes is larger than a single PUT allows (%d)", len(data), MaxPutSize))
	}
	cond := opts.If
	in := &s3sdk.PutObjectInput{
		Bucket:        &b.bucket,
		Key:           &key,
		Body:          bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data))),
		Metadata:      op.Metadata,
	}
	if v, match := cond.Match(); match {
		in.IfMatch = aws.String(string(v))
	} else if cond == driver.IfAbsent() {
		in.IfNoneMatch = aws.String("*")
	}
	sent := time.Now()
	var optFns []func(*s3sdk.Options)
	if cond != (driver.Condition{}) {
		optFns = append(optFns, returnRateLimits)
	}
	out, err := client.PutObject(op.Context(), in, optFns...)
	if err != nil {
		t := serviceTime(nil, err, nil)
		k := kind(err, cond)
		if op.Attempts() > 1 && k == driver.ErrRateLimited {
			// The last attempt was not applied, but an earlier one, which
			// failed otherwise (a lost reply, a 5xx), may have been.
			k = nil
		}
		if op.Attempts() > 1 && (k == driver.ErrPrecondition || k == nil) {
			v, err := b.settle(ctx, op, k, err, key, cond, data, sent)
			return driver.Attrs{Version: v, Time: t}, err
		}
		return driver.Attrs{Time: t}, fail(op, k, err)
	}
	a := driver.Attrs{Version: driver.Version(aws.ToString(out.ETag)), Time: serviceTime(&out.ResultMetadata, nil, nil)}
	if a.Version == "" {
		return driver.Attrs{Time: a.Time}, op.Fail(nil, errors.New("the service returned no ETag"))
	}
	return a, nil
}

// settle reads key back after a PutObject of data that the SDK sent more
// than once and that failed with err of kind k (MinIO resets a refused
// PUT's connection, so the retry may meet its own first attempt). The
// write succeeded if the object holds data; it is ErrPrecondition if older
// bytes fail its condition; otherwise what Fail says (settle.Judge).
func (b *Bucket) settle(ctx context.Context, op *driver.Op, k, err error, key string, cond driver.Condition, data []byte, sent time.Time) (driver.Version, error) {
	rb, rerr := b.readBack(ctx, key, int64(len(data))+1)
	if rerr != nil {
		return "", op.Fail(k, fmt.Errorf("%w (reading the object back to settle the write failed too: %w)", err, rerr))
	}
	switch settle.Judge(data, sent, rb) {
	case settle.Ours:
		return rb.Version, nil
	case settle.NotApplied:
		// The object has not changed since before the first attempt; if it
		// fails the condition, it did throughout, so every attempt that
		// reached the service was refused, whether or not its answer came.
		v, match := cond.Match()
		if cond == driver.IfAbsent() || match && rb.Version != v {
			return "", op.FailSettled(driver.ErrPrecondition, fmt.Errorf("the client library sent the write %d times; the object read back afterwards is not this write's, "+
				"was last modified before its first attempt and fails the condition, so no attempt landed and the write is refused: %w", op.Attempts(), err))
		}
		return "", op.Fail(k, fmt.Errorf("%w (no attempt landed: the object read back is not this write's and was last modified before its first attempt)", err))
	}
	return "", op.Fail(k, err)
}

// readBack reads key as settle.Judge needs it: at most limit
// bytes, the version, Last-Modified and the response's Date.
func (b *Bucket) readBack(ctx context.Context, key string, limit int64) (settle.ReadBack, error) {
	out, err := b.ctl.GetObject(ctx, &s3sdk.GetObjectInput{Bucket: &b.bucket, Key: &key})
	if err != nil {
		if errors.Is(kind(err, driver.Condition{}), driver.ErrNotExist) {
			return settle.ReadBack{}, nil
		}
		return settle.ReadBack{}, err
	}
	defer out.Body.Close()
	data, err := io.ReadAll(io.LimitReader(out.Body, limit))
	if err != nil {
		return settle.ReadBack{}, err
	}
	rb := settle.ReadBack{Exists: true, Data: data, Version: driver.Version(aws.ToString(out.ETag)), Modified: aws.ToTime(out.LastModified)}
	if raw, ok := awsmiddleware.GetRawResponse(out.ResultMetadata).(*smithyhttp.Response); ok {
		if t, err := http.ParseTime(raw.Header.Get("Date")); err == nil {
			rb.Now = t
		}
	}
	return rb, nil
}

// serviceTime is the service's time the last response to an SDK call
// stated (from md on success, err on failure) and, for a Get, modified;
// zero without a response.
func serviceTime(md *middleware.Metadata, err error, modified *time.Time) driver.ServiceTime {
	var date time.Time
	if md != nil {
		date, _ = awsmiddleware.GetServerTime(*md)
	}
	var re *awshttp.ResponseError
	if err != nil && errors.As(err, &re) && re.Response != nil && re.Response.Response != nil {
		if t, perr := http.ParseTime(re.Response.Header.Get("Date")); perr == nil {
			date = t
		}
	}
	if date.IsZero() {
		return driver.ServiceTime{}
	}
	return driver.ServiceTime{Date: date, Modified: aws.ToTime(modified), Resolution: time.Second}
}

// Delete removes key with one DeleteObject request. A missing key is
// success. IfMatch is sent as If-Match where the bucket declares a
// conditional delete, and refused with driver.ErrUnsupported otherwise.
func (b *Bucket) Delete(ctx context.Context, key string, cond driver.Condition) error {
	op, err := driver.BeginDelete(ctx, b.caps, b.profile.Driver, key, cond)
	if err != nil {
		return err
	}
	in := &s3sdk.DeleteObjectInput{Bucket: &b.bucket, Key: &key}
	if v, match := cond.Match(); match {
		in.IfMatch = aws.String(string(v))
	}
	if _, err := b.ctl.DeleteObject(op.Context(), in); err != nil {
		k := kind(err, cond)
		if cond == (driver.Condition{}) && k == driver.ErrNotExist {
			return nil
		}
		return fail(op, k, err)
	}
	return nil
}

// kind classifies an SDK error (see s3proto.Kind); a request that could
// not be signed, or whose credentials could not be had (from a client built
// by NewClient), is ErrPermission.
func kind(err error, cond driver.Condition) error {
	var se *v4.SigningError
	var ce *credentialsError
	if errors.As(err, &se) || errors.As(err, &ce) {
		return driver.ErrPermission
	}
	code, status := apiError(err)
	return s3proto.Kind(code, status, cond)
}

// fail is op.Fail, and for a rate-limited answer op.RateLimited with the
// wait the service asked for (its Retry-After header), where it gave one.
func fail(op *driver.Op, k, err error) error {
	if k != driver.ErrRateLimited {
		return op.Fail(k, err)
	}
	var re *awshttp.ResponseError
	var wait time.Duration
	if errors.As(err, &re) && re.Response != nil && re.Response.Response != nil {
		now, perr := http.ParseTime(re.Response.Header.Get("Date"))
		if perr != nil {
			now = time.Now()
		}
		wait, _ = httpdate.RetryAfter(re.Response.Header.Get("Retry-After"), now)
	}
	return op.RateLimited(err, wait)
}

// returnRateLimits makes the retryer, for one conditional PutObject,
// return a rate-limited answer (driver.ErrRateLimited) rather than retry:
// a retry's refusal would have to be called ErrOutcomeUnknown although no
// attempt landed.
func returnRateLimits(o *s3sdk.Options) {
	if o.Retryer == nil {
		return
	}
	v2, ok := o.Retryer.(aws.RetryerV2)
	if !ok {
		v2 = retryerV2{o.Retryer}
	}
	o.Retryer = rateLimitsReturned{v2}
}

// rateLimitsReturned is a retryer that retries what its own does, but a
// rate-limited answer.
type rateLimitsReturned struct{ aws.RetryerV2 }

// IsErrorRetryable is false for a rate-limited answer.
func (r rateLimitsReturned) IsErrorRetryable(err error) bool {
	if kind(err, driver.Condition{}) == driver.ErrRateLimited {
		return false
	}
	return r.RetryerV2.IsErrorRetryable(err)
}

// retryerV2 lifts an aws.Retryer to an aws.RetryerV2.
type retryerV2 struct{ aws.Retryer }

// GetAttemptToken is the Retryer's GetInitialToken.
func (r retryerV2) GetAttemptToken(context.Context) (func(error) error, error) {
	return r.GetInitialToken(), nil
}

// apiError returns the service's error code and HTTP status, if err carries
// them.
func apiError(err error) (code string, status int) {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	return code, status
}
